"""Difficulty critic and acceptance rule of environment adaptation (arXiv 2602.02488, M5-M6).

A task whose success rate ``acc`` lies outside the open band ``(low, high)`` is rewritten: ``acc >= high`` -> make it
harder, ``acc <= low`` -> make it easier (the edges themselves trigger a rewrite, as in the authors' code). A rewrite
``q'`` with fresh success rate ``acc'`` replaces ``q`` only if it moves strictly toward the band and is solvable::

    harder:  low < acc' < acc          easier:  acc < acc' < high          never when acc' == 0

These inequalities are strict, as in the paper; the authors' code accepts ``acc' >= low`` (harder) and
``acc' <= high`` (easier), i.e. a rewrite landing exactly on the band's edge, which the next iteration would rewrite
again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from enum import Enum

from torch import Tensor

__all__ = ["DEFAULT_BAND", "RATE_TOLERANCE", "DifficultyCritic", "Direction", "accept_rewrite", "check_strict_band"]

DEFAULT_BAND: tuple[float, float] = (0.2, 0.8)
"""``(alpha_low, alpha_high)`` of the paper."""

RATE_TOLERANCE: float = 1e-6
"""Rates within this of a band edge (or of each other) compare as equal.

Success rates are ``k/n`` with ``n`` rollouts (``n`` far below ``10**5``), so two different rates differ by more than
``1e-5``; a rate that went through float32 on its way here (``4/5 -> 0.800000011920929``, ``1/5 -> 0.200000003``)
is off by less than ``1e-7``. Comparing with this tolerance puts such a rate back on the edge it belongs to.
"""


class Direction(Enum):
    """Which way a task should be rewritten."""

    HARDER = "harder"
    KEEP = "keep"
    EASIER = "easier"


def check_strict_band(name: str, band: Sequence[float]) -> tuple[float, float]:
    """Validate a band ``(low, high)`` with ``0 <= low < high <= 1``; return it as floats."""
    if isinstance(band, (str, bytes)) or not isinstance(band, Sequence) or len(band) != 2:
        raise ValueError(f"{name}: expected a pair (low, high), got {band!r}")
    low, high = float(band[0]), float(band[1])
    if not (0.0 <= low < high <= 1.0):
        raise ValueError(f"{name}: expected 0 <= low < high <= 1, got ({low}, {high})")
    return low, high


def _check_rate(name: str, value: float) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected a success rate in [0, 1], got {value!r}")
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a success rate in [0, 1], got {value!r}") from None
    if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
        raise ValueError(f"{name}: expected a success rate in [0, 1], got {value!r}")
    return rate


class DifficultyCritic:
    """Decide the rewrite direction of tasks from their success rates.

    Args:
        band: ``(low, high)``, ``0 <= low < high <= 1``.

    Examples:
        >>> critic = DifficultyCritic()
        >>> critic.direction(0.875), critic.direction(0.5), critic.direction(0.2)
        (<Direction.HARDER: 'harder'>, <Direction.KEEP: 'keep'>, <Direction.EASIER: 'easier'>)
    """

    def __init__(self, *, band: tuple[float, float] = DEFAULT_BAND) -> None:
        self.band = check_strict_band("band", band)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(band={self.band})"

    def direction(self, success_rate: float) -> Direction:
        """HARDER if ``rate >= high``, EASIER if ``rate <= low``, else KEEP (edges inclusive)."""
        rate = _check_rate("success_rate", success_rate)
        low, high = self.band
        if rate >= high - RATE_TOLERANCE:
            return Direction.HARDER
        if rate <= low + RATE_TOLERANCE:
            return Direction.EASIER
        return Direction.KEEP

    def directions(self, rates: Tensor | Iterable[float]) -> list[Direction]:
        """``direction`` of every rate of a 1-D tensor or a sequence of floats, in order."""
        if isinstance(rates, Tensor):
            if rates.dim() > 1:
                raise ValueError(f"rates: expected a 1-D tensor, got shape {tuple(rates.shape)}")
            values: list[float] = [float(x) for x in rates.reshape(-1).tolist()]
        else:
            values = list(rates)
        return [self.direction(rate) for rate in values]


def accept_rewrite(
    direction: Direction, acc: float, acc_new: float, *, band: tuple[float, float] = DEFAULT_BAND
) -> bool:
    """Whether a rewrite with success rate ``acc_new`` replaces a task with success rate ``acc``.

    Args:
        direction: ``Direction.HARDER`` or ``Direction.EASIER`` (KEEP raises: no rewrite was requested).
        acc: success rate of the original task, in ``[0, 1]``.
        acc_new: success rate of the rewrite, in ``[0, 1]``.
        band: ``(low, high)``.

    Returns:
        HARDER: ``low < acc_new < acc``; EASIER: ``acc < acc_new < high``; always ``False`` if ``acc_new == 0``.

    Examples:
        >>> accept_rewrite(Direction.HARDER, 1.0, 0.875), accept_rewrite(Direction.EASIER, 0.0, 0.0)
        (True, False)
    """
    low, high = check_strict_band("band", band)
    old = _check_rate("acc", acc)
    new = _check_rate("acc_new", acc_new)
    if not isinstance(direction, Direction):
        raise ValueError(f"direction: expected a Direction, got {direction!r}")
    if direction is Direction.KEEP:
        raise ValueError("direction: expected HARDER or EASIER, got KEEP (no rewrite is requested inside the band)")
    tol = RATE_TOLERANCE  # rates that went through float32 compare equal to the edge they round to
    if new <= tol:
        return False
    if direction is Direction.HARDER:
        return low + tol < new < old - tol
    return old + tol < new < high - tol
