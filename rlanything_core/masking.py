"""Masked reductions and index compaction. Masks select with ``torch.where``; they never multiply."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["compact_index", "masked_mean", "masked_sum"]


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
