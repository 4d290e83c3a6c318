r"""Parsing model outputs: the last ``\boxed{...}``, an action index, a judge's vote.

Pure functions on strings. Unparseable output is data: the parsers return ``None`` (or a vote of ``0``) and the caller
counts it and applies its documented fallback; nothing here raises on model text, and nothing silently maps garbage to
action 0 (the reference implementation's behaviour, Open-AgentRL sample/alfworld_rl_rollout.py).
"""

from __future__ import annotations

import re

__all__ = ["BOXED_OPEN", "parse_action_index", "parse_boxed", "parse_vote"]

BOXED_OPEN = "\\boxed{"
"""The opening of a boxed answer (a literal backslash)."""

_ACTION_RE = re.compile(r"^\s*\(?\s*([0-9]+)\s*(?:[).:\]](?:\s+.*\S)?)?\s*$", re.DOTALL)
_FRACTION_RE = re.compile(r"[0-9]\s*/\s*[0-9]")
_NUMBER_RE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_SPACED_SIGN = re.compile(r"([+-])\s+(?=[0-9])")
_MINUS_LOOKALIKES = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2014": "-", "\ufe63": "-", "\uff0d": "-"})
_WRAPPERS = re.compile(r"\\(?:text|mathrm|mathbf|textbf)\{([^{}]*)\}")


def _boxed_spans(text: str) -> list[tuple[int, int | None]]:
    r"""Top-level ``\boxed{`` groups, left to right: (content start, content end or ``None`` when never closed)."""
    spans: list[tuple[int, int | None]] = []
    i = text.find(BOXED_OPEN)
    while i >= 0:
        start = i + len(BOXED_OPEN)
        depth, j, end = 1, start, None
        while j < len(text):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = j
                    break
            j += 1
        spans.append((start, end))
        if end is None:
            break
        i = text.find(BOXED_OPEN, end + 1)
    return spans


def parse_boxed(text: str) -> str | None:
    r"""Content of the last top-level ``\boxed{...}`` in ``text``, braces balanced.

    Nested braces are kept (``\boxed{\frac{1}{2}}`` gives ``\frac{1}{2}``); a ``\boxed`` inside another belongs to the
    outer one. If the last ``\boxed{`` is never closed (for example a truncated generation) the result is ``None``
    rather than an earlier answer the model went on to revise.

    Args:
        text: model output.

    Returns:
        The content (not stripped), or ``None`` when there is no complete last box.
    """
    if not isinstance(text, str):
        return None
    spans = _boxed_spans(text)
    if not spans:
        return None
    start, end = spans[-1]
    return None if end is None else text[start:end]


def parse_action_index(text: str, num_actions: int) -> int | None:
    r"""The chosen action index from the last ``\boxed{}`` (the paper's policy format), or ``None``.

    Accepted contents: an ASCII integer, optionally in parentheses, optionally followed by a delimiter ``)``, ``.``,
    ``:`` or ``]`` and then whitespace and any text (``3``, ``(3)``, ``3.``, ``3) go to desk 1``; not ``1.5``).
    Anything else, or an index outside ``[0, num_actions)``, gives ``None``: the caller applies its documented
    fallback and counts the failure.

    Args:
        text: the policy's response.
        num_actions: how many admissible actions were listed (indices ``0 .. num_actions - 1``).

    Returns:
        The index, or ``None``.

    Raises:
        ValueError: ``num_actions`` is not a non-negative integer.
    """
    if isinstance(num_actions, bool) or not isinstance(num_actions, int) or num_actions < 0:
        raise ValueError(f"num_actions: expected an integer >= 0, got {num_actions!r}")
    content = parse_boxed(text)
    if content is None:
        return None
    match = _ACTION_RE.match(content)
    if match is None:
        return None
    index = int(match.group(1))
    return index if index < num_actions else None


def parse_vote(text: str) -> int:
    r"""A judge's vote from its last ``\boxed{}``: ``+1``, ``-1``, or ``0`` when unparseable or ambiguous.

    Follows the authors' rule (Open-AgentRL sample/alfworld_rl_rollout.py) with stricter handling of ambiguity: unicode
    minus signs are normalized (``- 1`` reads as ``-1``) and ``\text{...}``-style wrappers and ``$`` removed; a fraction
    (``1/2``) gives 0; otherwise every number in the box must equal the same one of ``+1`` / ``-1`` (``1``, ``+1``,
    ``1.0``, ``score: -1``); any other number (``2``, ``0``, ``1 out of 10``) or both signs (``1 or -1``) gives 0. No
    box, or an unclosed last box, gives 0. The caller counts 0 as a format failure.

    Args:
        text: the judge's response.

    Returns:
        ``1``, ``-1`` or ``0``.
    """
    content = parse_boxed(text)
    if content is None:
        return 0
    content = _SPACED_SIGN.sub(r"\1", content.translate(_MINUS_LOOKALIKES).replace("$", ""))
    for _ in range(4):
        content = _WRAPPERS.sub(r"\1", content)
    if _FRACTION_RE.search(content):
        return 0
    numbers = {float(x) for x in _NUMBER_RE.findall(content)}
    if numbers == {1.0}:
        return 1
    if numbers == {-1.0}:
        return -1
    return 0
