"""Masked reductions and segment (group) statistics. Masks select with ``torch.where``; they never multiply."""

from __future__ import annotations

import torch
from torch import Tensor

from rlanything_core.constants import EPS

__all__ = [
    "compact_index",
    "masked_mean",
    "masked_sum",
    "segment_mean_std",
    "standardize_by_segment",
    "step_segments",
]


def masked_sum(values: Tensor, mask: Tensor, dim: int | tuple[int, ...] | None = None) -> Tensor:
    """Sum of ``values`` where ``mask``; padding (even NaN) contributes nothing.

    Examples:
        >>> import torch
        >>> masked_sum(torch.tensor([1.0, float("nan")]), torch.tensor([True, False]))
        tensor(1.)
    """
    selected = torch.where(mask, values, torch.zeros((), dtype=values.dtype, device=values.device))
    return selected.sum() if dim is None else selected.sum(dim=dim)


def masked_mean(values: Tensor, mask: Tensor, dim: int | tuple[int, ...] | None = None) -> Tensor:
    """Mean of ``values`` where ``mask``; an all-masked slice gives 0, never NaN.

    Examples:
        >>> import torch
        >>> masked_mean(torch.tensor([[1.0, 3.0], [5.0, 7.0]]), torch.tensor([[True, True], [False, False]]), dim=1)
        tensor([2., 0.])
    """
    total = masked_sum(values, mask, dim)
    count = mask.sum() if dim is None else mask.sum(dim=dim)
    return torch.where(count > 0, total / count.clamp(min=1).to(values.dtype), torch.zeros_like(total))


def compact_index(index: Tensor) -> tuple[Tensor, int]:
    """Map arbitrary non-negative ids to ``0..K-1`` (so sparse task ids never allocate huge tables)."""
    if index.numel() == 0:
        return index.clone(), 0
    unique, inverse = torch.unique(index, return_inverse=True)
    return inverse, int(unique.numel())


def step_segments(group_index: Tensor, num_steps: int) -> tuple[Tensor, int]:
    """Segment id of every (rollout, step) cell: cells of one task group at one step index share a segment.

    Args:
        group_index: ``(B,)`` int64 task group of each rollout.
        num_steps: ``S``.

    Returns:
        ``(B, S)`` int64 segment ids in ``0..K*S-1`` and the number of segments ``K*S``.
    """
    groups, num_groups = compact_index(group_index)
    steps = torch.arange(num_steps, device=group_index.device)
    return groups.unsqueeze(1) * num_steps + steps.unsqueeze(0), num_groups * num_steps


def segment_mean_std(
    values: Tensor, mask: Tensor, segment: Tensor, num_segments: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Count, mean and population standard deviation of ``values[mask]`` per segment.

    Two passes (mean, then squared deviations) rather than ``E[x^2] - E[x]^2``, which cancels catastrophically.

    Args:
        values: any shape, floating.
        mask: bool, same shape.
        segment: int64, same shape, ids in ``0..num_segments-1``.
        num_segments: number of segments.

    Returns:
        ``count`` (int64), ``mean`` and ``std`` (values' dtype), each ``(num_segments,)``; empty segments give 0.
    """
    flat_mask = mask.reshape(-1)
    seg = segment.reshape(-1)[flat_mask]
    x = values.reshape(-1)[flat_mask]
    count = torch.zeros(num_segments, dtype=torch.int64, device=values.device).index_add_(
        0, seg, torch.ones_like(seg)
    )
    denom = count.clamp(min=1).to(values.dtype)
    mean = torch.zeros(num_segments, dtype=values.dtype, device=values.device).index_add_(0, seg, x) / denom
    dev = x - mean[seg]
    var = torch.zeros(num_segments, dtype=values.dtype, device=values.device).index_add_(0, seg, dev * dev) / denom
    return count, mean, var.sqrt()


def standardize_by_segment(
    values: Tensor,
    mask: Tensor,
    segment: Tensor,
    num_segments: int,
    *,
    eps: float = EPS,
    min_count: int = 2,
    singleton_value: Tensor | None = None,
) -> Tensor:
    """Z-score ``values`` within each segment: ``(x - mean) / std`` (population std).

    A segment with ``std <= eps`` standardizes to 0. A segment with fewer than ``min_count`` members has no baseline:
    its cells get ``singleton_value`` at those positions when given (the authors keep the raw value there), else 0.
    Masked-out cells are always 0.

    Returns:
        Tensor shaped like ``values``.
    """
    count, mean, std = segment_mean_std(values, mask, segment, num_segments)
    seg = segment.clamp(min=0, max=max(num_segments - 1, 0))
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    if num_segments == 0:
        return torch.zeros_like(values)
    cell_mean, cell_std, cell_count = mean[seg], std[seg], count[seg]
    z = torch.where(cell_std > eps, (values - cell_mean) / cell_std.clamp(min=eps), zero)
    if singleton_value is not None:
        z = torch.where(cell_count < min_count, singleton_value, z)
    else:
        z = torch.where(cell_count < min_count, zero, z)
    return torch.where(mask, z, zero)
