"""Call-style unit tests written by a model, as data: literal arguments and a literal expected value.

A judge that writes a functional test (``nums = [1, 2], k = 3`` returns ``[3, 4]``) writes *data*. Pasting its text
into test code (``assert f(<call>) == (<expected>)``) would let it write the verdict instead: an expected value of
``[0]) or (True`` passes every program, and other texts skip the call, call the harness's own report function or
read the program's source (arXiv 2602.02488's coding setting). So the text is parsed with :mod:`ast` and
each argument and the expected value with :func:`ast.literal_eval`, anything else is refused (a format failure,
counted by the caller), and the sandbox harness binds the values as plain data and calls the function itself with
fixed, trusted code (:func:`literal_call_test`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlanything_core.sandbox.config import FunctionalTest, check_plain_data

__all__ = ["MAX_LITERAL_CHARS", "LiteralCall", "literal_call_test", "parse_literal_call"]

MAX_LITERAL_CHARS = 100_000
"""Longest accepted call or expected text (a longer one is refused before parsing: parsing costs memory)."""

_ARGS, _KWARGS, _EXPECTED = "__rla_args__", "__rla_kwargs__", "__rla_expected__"
_PARSE_ERRORS = (SyntaxError, ValueError, TypeError, MemoryError, RecursionError)


@dataclass(frozen=True)
class LiteralCall:
    """A call's literal positional and keyword arguments and the literal value it should return."""

    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = None


def parse_literal_call(call: str, expected: str) -> LiteralCall:
    """Parse a model-written call (``nums = [1, 2], k = 3`` or ``[1, 2], 3``) and its expected value as literals.

    Args:
        call: the arguments as they would appear between the call's parentheses; keyword arguments may be
            written ``name = value`` (the examples' format). Empty for a call without arguments.
        expected: the returned value, a Python literal.

    Returns:
        The parsed call (only plain data: numbers, strings, bytes, None, booleans and their containers).

    Raises:
        ValueError: naming what was not a literal call (text that closes the parentheses, names, calls,
            operators other than a literal's sign, starred arguments, repeated keywords, over-long text).

    Examples:
        >>> parse_literal_call("nums = [1, 2], k = 3", "[3, 4]")
        LiteralCall(args=(), kwargs={'nums': [1, 2], 'k': 3}, expected=[3, 4])
        >>> parse_literal_call("[0]", "[0]) or (True")
        Traceback (most recent call last):
        ...
        ValueError: expected value: not a Python literal ([0]) or (True)
    """
    if not isinstance(call, str) or not isinstance(expected, str):
        raise ValueError("call and expected must be str")
    for name, text in (("call", call), ("expected value", expected)):
        if len(text) > MAX_LITERAL_CHARS:
            raise ValueError(f"{name}: longer than {MAX_LITERAL_CHARS} characters ({len(text)})")
    try:
        value = ast.literal_eval(expected.strip())
    except _PARSE_ERRORS:
        raise ValueError(f"expected value: not a Python literal ({expected.strip()[:200]})") from None
    args, kwargs = _parse_arguments(call.strip())
    out = LiteralCall(args=tuple(args), kwargs=kwargs, expected=value)
    check_plain_data("expected value", out.expected)  # literal_eval only builds plain data; kept as the guarantee
    return out


def _parse_arguments(call: str) -> tuple[list[Any], dict[str, Any]]:
    """The literal positional and keyword arguments of ``call`` (the text between a call's parentheses)."""
    # The keyword form `nums = [1, 2], k = 3` is a call's own syntax once inside `_(...)`; the node must then be
    # exactly one call of the placeholder name, or the text closed the parentheses (`1), (2` or `1)(2`).
    try:
        tree = ast.parse(f"_({call}\n)", mode="eval")
    except _PARSE_ERRORS:
        raise ValueError(f"call: not a list of literal arguments ({call[:200]})") from None
    node = tree.body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_"):
        raise ValueError(f"call: not a single argument list ({call[:200]})")
    args: list[Any] = []
    for k, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred):
            raise ValueError(f"call: argument {k} is starred; write the values themselves")
        args.append(_literal(f"call: argument {k}", arg))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError("call: `**` arguments are not literals; write name = value")
        if kw.arg in kwargs:  # ast.parse accepts it; only the compiler would refuse it
            raise ValueError(f"call: argument {kw.arg!r} given twice; not a list of literal arguments")
        kwargs[kw.arg] = _literal(f"call: argument {kw.arg!r}", kw.value)
    return args, kwargs


def _literal(name: str, node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except _PARSE_ERRORS:
        raise ValueError(f"{name}: not a Python literal ({ast.unparse(node)[:200]})") from None


def literal_call_test(
    entry_point: str,
    call: LiteralCall,
    *,
    time_limit_s: float | None = None,
    setup: str = "",
    program_names: tuple[str, ...] = (),
) -> FunctionalTest:
    """The functional test "``entry_point(*args, **kwargs) == expected``" with the call's values as data.

    The test code is fixed text around ``entry_point`` (the problem's own, trusted, for example
    ``Solution().twoSum``); the arguments and the expected value are bound by name in the harness
    (:attr:`FunctionalTest.values`) and never become code.

    Raises:
        ValueError: ``entry_point`` is not a single Python expression.
    """
    try:
        ast.parse(entry_point.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"entry_point: expected a Python expression, got {entry_point!r}") from None
    code = f"\nassert ({entry_point.strip()})(*{_ARGS}, **{_KWARGS}) == {_EXPECTED}\n"
    values = {_ARGS: list(call.args), _KWARGS: dict(call.kwargs), _EXPECTED: call.expected}
    return FunctionalTest(code, time_limit_s=time_limit_s, setup=setup, program_names=program_names, values=values)
