"""Pure parsers of model output: program extraction and the reward model's unit tests."""

from __future__ import annotations

import ast
import re

__all__ = ["extract_code", "parse_unit_test"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*\n(.*?)```", re.DOTALL)
_PY_LANGS = {"python", "py", "python3", "py3"}


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def extract_code(response: str) -> str | None:
    r"""Extract the program from a model response.

    Rule, first that applies:
    1. the last closed fenced block labelled ``python``/``py``/``python3`` (case-insensitive);
    2. the last closed fenced block without a language label;
    3. an unclosed trailing `` ```python `` block (a generation cut by the token limit), if it parses;
    4. the whole response, if it is non-empty and parses as Python;
    5. otherwise None (no program: count it, do not raise).

    >>> extract_code("text\n```python\nprint(1)\n```\nmore\n```python\nprint(2)\n```")
    'print(2)\n'
    >>> extract_code("I cannot do this.") is None
    True
    """
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(response)]
    for want in (lambda lang: lang in _PY_LANGS, lambda lang: lang == ""):
        chosen = [body for lang, body in blocks if want(lang)]
        if chosen:
            return chosen[-1]
    tail = re.search(r"```[ \t]*(?:python3?|py3?)[ \t]*\n(.*)\Z", response, re.DOTALL | re.IGNORECASE)
    if tail and "```" not in tail.group(1) and tail.group(1).strip() and _parses(tail.group(1)):
        return tail.group(1)
    if response.strip() and _parses(response):
        return response
    return None


_INPUT_HDR = re.compile(r"\*{0,2}[ \t]*test[ \t]+input[ \t]*:?[ \t]*\*{0,2}[ \t]*:?", re.IGNORECASE)
_OUTPUT_HDR = re.compile(r"\*{0,2}[ \t]*test[ \t]+output[ \t]*:?[ \t]*\*{0,2}[ \t]*:?", re.IGNORECASE)
_NEXT_HDR = re.compile(r"^\s*\*\*[^*\n]+\*\*", re.MULTILINE)
_ANY_FENCE = re.compile(r"```[^\n`]*\n(.*?)```|```([^`\n]*)```", re.DOTALL)


def _section_value(section: str) -> str | None:
    fences = list(_ANY_FENCE.finditer(section))
    if fences:
        last = fences[-1]
        return last.group(1) if last.group(1) is not None else last.group(2)
    text = section.strip()
    return text or None


def parse_unit_test(text: str) -> tuple[str, str] | None:
    r"""Parse the reward model's unit test: ``**Test Input:**`` and ``**Test Output:**`` sections.

    Each value is the last fenced block between its header and the next header (the input's section ends at the
    output header, the output's at the next ``**...**`` header such as ``**Explanation:**``); without a fenced block
    the section's plain text is used. The last input header wins (models often restate the format first). The input
    gets exactly one trailing newline; the output is stripped.

    Returns:
        ``(stdin, expected_stdout)``, or None when a header is missing or the output is empty (bad model output is
        data: the caller counts it).

    >>> parse_unit_test("**Test Input:**\n```\n1 2\n```\n**Test Output:**\n```\n3\n```\n**Explanation:** sum")
    ('1 2\n', '3')
    """
    inputs = list(_INPUT_HDR.finditer(text))
    if not inputs:
        return None
    start = inputs[-1].end()
    out_hdr = _OUTPUT_HDR.search(text, start)
    if out_hdr is None:
        return None
    in_value = _section_value(text[start : out_hdr.start()])
    rest = text[out_hdr.end() :]
    nxt = _NEXT_HDR.search(rest)
    out_value = _section_value(rest[: nxt.start()] if nxt else rest)
    if in_value is None or out_value is None or not out_value.strip():
        return None
    return in_value.strip("\n") + "\n", out_value.strip()
