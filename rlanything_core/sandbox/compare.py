"""Output comparison: whitespace-normalized, optionally case-insensitive and float-tolerant (token-wise).

The token rule follows the Kattis problem-package default output validator: outputs are split on whitespace; two
token lists match when they have the same length and every pair matches, where a pair matches if the strings are
equal (case-folded unless ``case_sensitive``) or, when a tolerance is set and the *expected* token is a decimal
number, the produced token is also a number and ``|got - exp| <= abs_tol`` or ``|got - exp| <= rel_tol * |exp|``.
Without tolerances and with ``case_sensitive=True`` this is exactly ``" ".join(a.split()) == " ".join(b.split())``
(the reference implementation's rule).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["OutputJudge", "normalize_whitespace", "outputs_match"]

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def normalize_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and strip both ends."""
    return " ".join(text.split())


def _token_match(got: str, exp: str, abs_tol: float | None, rel_tol: float | None, case_sensitive: bool) -> bool:
    if got == exp or (not case_sensitive and got.casefold() == exp.casefold()):
        return True
    if abs_tol is None and rel_tol is None:
        return False
    if not (_NUMBER.fullmatch(exp) and _NUMBER.fullmatch(got)):
        return False
    g, e = float(got), float(exp)
    if not (math.isfinite(g) and math.isfinite(e)):
        return False
    diff = abs(g - e)
    return (abs_tol is not None and diff <= abs_tol) or (rel_tol is not None and diff <= rel_tol * abs(e))


def outputs_match(
    got: str,
    expected: str,
    *,
    abs_tol: float | None = None,
    rel_tol: float | None = None,
    case_sensitive: bool = True,
) -> bool:
    r"""Compare a program's output with the expected output, token-wise.

    Args:
        got: the program's output.
        expected: the judge's answer.
        abs_tol: absolute float tolerance, or None.
        rel_tol: relative float tolerance (relative to the expected value), or None.
        case_sensitive: compare letters exactly (False: case-folded, Kattis' default).

    Returns:
        Whether the outputs match.

    >>> outputs_match("1 2\n3 \n", "1 2 3")
    True
    >>> outputs_match("0.3333333", "0.333333333", abs_tol=1e-6)
    True
    >>> outputs_match("YES", "yes"), outputs_match("YES", "yes", case_sensitive=False)
    (False, True)
    """
    for name, tol in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
        if tol is not None and not (tol >= 0.0):
            raise ValueError(f"{name} must be a non-negative float or None, got {tol!r}")
    if abs_tol is None and rel_tol is None and case_sensitive:
        return normalize_whitespace(got) == normalize_whitespace(expected)
    a, b = got.split(), expected.split()
    return len(a) == len(b) and all(_token_match(x, y, abs_tol, rel_tol, case_sensitive) for x, y in zip(a, b))


@dataclass(frozen=True)
class OutputJudge:
    """Holds the comparison settings of one problem; call it with ``(got, expected)``.

    Attributes:
        abs_tol: absolute float tolerance or None.
        rel_tol: relative float tolerance or None.
        case_sensitive: exact letter case (False: Kattis' default case-insensitive comparison).
    """

    abs_tol: float | None = None
    rel_tol: float | None = None
    case_sensitive: bool = True

    def __post_init__(self) -> None:
        for name in ("abs_tol", "rel_tol"):
            tol = getattr(self, name)
            if tol is not None and not (tol >= 0.0):
                raise ValueError(f"{name} must be a non-negative float or None, got {tol!r}")

    @classmethod
    def kattis(cls, float_tolerance: float | None = None, *, case_sensitive: bool = False) -> OutputJudge:
        """Kattis default validator: ``float_tolerance`` is both the absolute and the relative tolerance."""
        return cls(abs_tol=float_tolerance, rel_tol=float_tolerance, case_sensitive=case_sensitive)

    def __call__(self, got: str, expected: str) -> bool:
        """Whether ``got`` matches ``expected`` under these settings."""
        return outputs_match(
            got, expected, abs_tol=self.abs_tol, rel_tol=self.rel_tol, case_sensitive=self.case_sensitive
        )
