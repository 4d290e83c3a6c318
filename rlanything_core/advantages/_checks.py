"""Boundary checks and NaN-safe kernels shared by the advantage and consistency-reward functions.

Private: the public functions in ``advantages.functional`` and ``rewards.consistency`` validate with these. The
kernels avoid ``torch.where`` on the large ``(B, S, M)`` grids: on CPU it is several times slower than arithmetic
(its kernel is not vectorized), and selection by ``nan_to_num`` then a 0/1 product is exact for finite values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_finite_where,
    check_floating,
    check_shape,
    check_tensor,
)

__all__ = [
    "check_finite_scalar",
    "check_nonnegative_scalar",
    "check_step_grid",
    "check_vote_grid",
    "finite_where",
    "inverse_std",
    "sum_last",
    "zero_outside",
]


def zero_outside(values: Tensor, mask: Tensor) -> Tensor:
    """``values`` where ``mask``, else 0; NaN/inf outside the mask never leak (a NaN-safe select).

    Same result as ``torch.where(mask, values, 0)`` wherever ``values`` is finite under the mask (callers check
    that first): non-finite entries are zeroed before the product, and ``finite * 0 == 0`` exactly. Written with
    arithmetic because torch's CPU ``where`` kernel is not vectorized (about 8x slower than an add on large grids).
    """
    return torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0) * mask


def sum_last(values: Tensor) -> Tensor:
    """Sum over the last (small: the ``m`` votes) axis as a matrix-vector product.

    torch's reduction over a trailing axis of size 3 is several times slower than a BLAS gemv on CPU.
    """
    return values @ torch.ones(values.shape[-1], dtype=values.dtype, device=values.device)


def inverse_std(std: Tensor, mean: Tensor, eps: float) -> Tensor:
    """``1 / std``, or 0 where the group is degenerate: ``std <= eps`` or ``std`` within rounding of ``mean``.

    The second clause is ``std <= 8 * finfo.eps * |mean|``: the mean of m equal float32 values is an ulp or two off,
    which leaves a spurious std of ~1e-7 * |mean| that an absolute ``eps = 1e-8`` would read as spread (and turn
    into z-scores of +-1). In float64 the clause is ~1e-15 * |mean|, below ``eps`` for any reward-sized mean.
    """
    tol = torch.clamp(mean.abs() * (8 * torch.finfo(std.dtype).eps), min=eps)
    return torch.where(std > tol, 1.0 / std.clamp(min=torch.finfo(std.dtype).tiny), 0.0)


def finite_where(name: str, value: Tensor, mask: Tensor) -> Tensor:
    """Check ``value`` is finite under ``mask``; return it with non-finite entries replaced by 0 (a new tensor)."""
    cleaned = torch.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0)
    if value.numel() and bool((mask > (cleaned == value)).any()):  # NaN and +-inf are the entries that changed
        check_finite_where(name, value, mask)
    return cleaned


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
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Check a ``(B, S, M)`` vote grid: float votes, bool masks of the same shape, ``vote_valid`` inside ``vote_mask``.

    Valid votes must be finite and lie in ``[-1, 1]`` (the paper's scores are ``+1``/``-1``; soft scores are allowed
    by the functions, :class:`~rlanything_core.types.StepBatch` insists on ``+1``/``-1``). Padding may hold anything.

    Args:
        votes: ``(B, S, M)`` floating.
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; must imply ``vote_mask``.
        grid: expected ``(B, S)`` (``None`` = any).

    Returns:
        The three tensors, and the clean votes: ``votes`` where ``vote_valid``, 0 elsewhere.
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
    if bool((vv > vm).any()):
        raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must imply vote_mask)")
    clamped = v.clamp(-1.0, 1.0)
    if v.numel() and bool((vv > (clamped == v)).any()):  # NaN, inf and |v| > 1 all fail ``clamped == v``
        check_finite_where("votes", v, vv)
        raise ValueError("votes: expected values in [-1, 1] where vote_valid")
    clean = clamped.nan_to_num_(0.0).mul_(vv)  # valid votes, 0 elsewhere (NaN-safe select, see zero_outside)
    return v, vm, vv, clean
