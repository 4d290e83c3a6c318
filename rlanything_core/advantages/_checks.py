"""Boundary checks shared by the advantage and consistency-reward functions (votes grid, scalars)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_finite_where,
    check_floating,
    check_shape,
    check_tensor,
)

__all__ = ["check_finite_scalar", "check_nonnegative_scalar", "check_step_grid", "check_vote_grid"]


def check_finite_scalar(name: str, value: float) -> float:
    """A finite real number (``bool`` is refused: ``True`` is not a coefficient)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def check_nonnegative_scalar(name: str, value: float) -> float:
    """A finite number ``>= 0`` (``lam``, ``eps``)."""
    out = check_finite_scalar(name, value)
    if out < 0:
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    return out


def check_step_grid(step_mask: object, rows: int | None = None) -> Tensor:
    """``step_mask``: ``(B, S)`` bool (``B == rows`` when given). Returns it."""
    mask = check_tensor("step_mask", step_mask)
    check_bool("step_mask", mask)
    check_shape("step_mask", mask, (rows, None))
    return mask


def check_vote_grid(
    votes: object, vote_mask: object, vote_valid: object, grid: Sequence[int | None] = (None, None)
) -> tuple[Tensor, Tensor, Tensor]:
    """Check a ``(B, S, M)`` vote grid: float votes, bool masks of the same shape, ``vote_valid`` inside ``vote_mask``.

    Valid votes must be finite and lie in ``[-1, 1]`` (the paper's scores are ``+1``/``-1``; soft scores are allowed
    by the functions, :class:`~rlanything_core.types.StepBatch` insists on ``+1``/``-1``). Padding may hold anything.

    Args:
        votes: ``(B, S, M)`` floating.
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; must imply ``vote_mask``.
        grid: expected ``(B, S)`` (``None`` = any).

    Returns:
        The three tensors.
    """
    v = check_tensor("votes", votes)
    vm = check_tensor("vote_mask", vote_mask)
    vv = check_tensor("vote_valid", vote_valid)
    check_floating("votes", v)
    check_shape("votes", v, (grid[0], grid[1], None))
    shape = tuple(v.shape)
    check_bool("vote_mask", vm)
    check_shape("vote_mask", vm, shape)
    check_bool("vote_valid", vv)
    check_shape("vote_valid", vv, shape)
    if bool((vv & ~vm).any()):
        raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must imply vote_mask)")
    check_finite_where("votes", v, vv)
    if bool((vv & (v.abs() > 1.0)).any()):
        raise ValueError("votes: expected values in [-1, 1] where vote_valid")
    return v, vm, vv
