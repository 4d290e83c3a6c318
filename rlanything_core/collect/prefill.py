"""Response prefills of the coding setting: the opening of the coder's program and of the unit-test writer's test.

A small model with a short token budget (SmolLM2-135M at 96 new tokens) that is asked to "think first" spends the
budget on prose and rarely reaches the ``python`` block or the ``**Test Input:**`` / ``**Test Output:**`` format:
every response then fails to parse and every reward is equal, so nothing trains. Prefilling the assistant's turn with
the format's opening makes the model write only the contents. The prefill ends the *prompt*
(:func:`~rlanything_core.generation.prompts.render_prefilled_prompt`): it is never sampled, carries no log-prob or
gradient, and the parser reads ``prefill + continuation``. A continuation that does not complete the format is still a
format failure (an unparseable test gets the unit-test format penalty; an unparseable program fails every test).
"""

from __future__ import annotations

import re
from enum import Enum

__all__ = [
    "CODE_FENCE",
    "FENCE_CLOSE",
    "UNIT_TEST_SCAFFOLD",
    "CodePrefill",
    "code_prefill",
    "parse_scaffolded_test",
    "unit_test_prefill",
]

CODE_FENCE = "```python\n"
"""The opening of the coder's ``python`` block."""

FENCE_CLOSE = "```"
"""What closes a fenced block (the coder's generation stops there when its response is prefilled)."""

UNIT_TEST_SCAFFOLD = "**Test Input:**\n```\n"
"""The opening of the unit-test format: the model writes the input, closes its block, then writes the output section."""


class CodePrefill(str, Enum):
    """How the coder's response begins."""

    NONE = "none"
    """Nothing: the model thinks, then writes its block (the paper's format; for models with a large budget)."""
    FENCE = "fence"
    """The ``python`` fence: the model writes the program directly."""
    STARTER = "starter"
    """The fence and the problem's starter code (a functional problem's signature), so the model writes the body;
    the fence alone when the problem has no starter code."""


def code_prefill(mode: CodePrefill | str, *, starter_code: str = "") -> str:
    """The text the coder's response starts with.

    Args:
        mode: a :class:`CodePrefill` or its value (``"none"``, ``"fence"``, ``"starter"``).
        starter_code: the problem's starter code (used by ``STARTER`` only).

    Returns:
        ``""``, :data:`CODE_FENCE`, or the fence followed by the starter code.

    Raises:
        ValueError: ``mode`` is not a :class:`CodePrefill` value.

    Examples:
        >>> code_prefill("fence")
        '```python\\n'
        >>> code_prefill(CodePrefill.STARTER, starter_code="def f(x):\\n    ")
        '```python\\ndef f(x):\\n    '
    """
    try:
        chosen = CodePrefill(mode)
    except ValueError:
        raise ValueError(f"mode: expected one of {[m.value for m in CodePrefill]}, got {mode!r}") from None
    if chosen is CodePrefill.NONE:
        return ""
    if chosen is CodePrefill.STARTER and starter_code.strip():
        return CODE_FENCE + starter_code
    return CODE_FENCE


def unit_test_prefill(scaffold: bool) -> str:
    """The text the unit-test writer's response starts with: :data:`UNIT_TEST_SCAFFOLD`, or ``""`` without it."""
    return UNIT_TEST_SCAFFOLD if scaffold else ""


_FENCE_CLOSE = re.compile(r"^[ \t]*```", re.MULTILINE)
# An output header on its own line: "**Test Output:**", "Test Output:", "Output:", "**Output**", "Expected output:".
_OUTPUT_HEADER = re.compile(
    r"^[ \t#]*\**[ \t]*(?:test[ \t]+|expected[ \t]+)?output[ \t]*:?[ \t]*\**[ \t]*:?[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_OPEN_FENCE = re.compile(r"\A\s*```[^\n`]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)


def parse_scaffolded_test(text: str) -> tuple[str, str] | None:
    r"""Parse a unit test written after :data:`UNIT_TEST_SCAFFOLD`: ``(stdin, expected_stdout)`` or ``None``.

    The scaffold fixes where the input is, so the rule is positional rather than "the last headers" of the free-form
    parser (:func:`~rlanything_core.envs.coding.extract.parse_unit_test`), and it accepts the output headers a small
    model writes instead of the exact ``**Test Output:**``:

    1. ``text`` starts with the scaffold; the input is everything up to the first closing fence (a line starting
       with three backticks), and must hold a non-blank character;
    2. the output is the first later line whose header names it (``**Test Output:**``, ``Test Output:``,
       ``Output:``, ``**Output**``, ``Expected output:``), followed by a closed fenced block (its content), or by
       text on the header's line, or else the next lines up to a blank line; it must hold a non-blank character.

    Anything else (no closing fence, no output header, an unclosed output block, empty values) is a format failure.
    The input gets exactly one trailing newline; the output is stripped (as the free-form parser does).

    Args:
        text: the response, scaffold included.

    Returns:
        ``(stdin, expected_stdout)``, or ``None``.

    Examples:
        >>> parse_scaffolded_test(UNIT_TEST_SCAFFOLD + "1 2\n```\n**Test Output:**\n```\n3\n```\n**Explanation:** sum")
        ('1 2\n', '3')
        >>> parse_scaffolded_test(UNIT_TEST_SCAFFOLD + "1 2\n```\nOutput: 3")
        ('1 2\n', '3')
        >>> parse_scaffolded_test(UNIT_TEST_SCAFFOLD + "I am not sure what to write") is None
        True
    """
    if not isinstance(text, str) or not text.startswith(UNIT_TEST_SCAFFOLD):
        return None
    body = text[len(UNIT_TEST_SCAFFOLD) :]
    close = _FENCE_CLOSE.search(body)
    if close is None or not body[: close.start()].strip():
        return None
    stdin = body[: close.start()].strip("\n") + "\n"
    rest = body[close.end() :]
    rest = rest[rest.find("\n") + 1 :] if "\n" in rest else ""  # the closing fence's line
    header = _OUTPUT_HEADER.search(rest)
    if header is None:
        return None
    after = rest[header.end() :]
    fenced = _OPEN_FENCE.match(after)
    if fenced is not None:
        value = fenced.group(1)
    elif after.lstrip().startswith("```"):
        return None  # an output block that is never closed (cut by the token limit)
    else:
        line, _, following = after.partition("\n")
        value = line if line.strip() else following.lstrip("\n").split("\n\n", 1)[0]
    return (stdin, value.strip()) if value.strip() else None
