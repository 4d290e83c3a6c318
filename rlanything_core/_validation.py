"""Argument checks at the public boundary: each failure is a ``ValueError`` naming the argument and the expectation."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "check_band",
    "check_bool",
    "check_finite_where",
    "check_floating",
    "check_index",
    "check_number",
    "check_positive_int",
    "check_shape",
    "check_tensor",
]


def check_tensor(name: str, value: object) -> Tensor:
    """Return ``value`` if it is a tensor, else raise naming ``name``."""
    if not isinstance(value, Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    return value


def check_shape(name: str, value: Tensor, shape: Sequence[int | None]) -> None:
    """Check ``value.shape`` against ``shape`` (``None`` matches any size); nothing is broadcast."""
    if value.dim() != len(shape) or any(want is not None and got != want for got, want in zip(value.shape, shape)):
        pretty = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name}: expected shape {pretty}, got {tuple(value.shape)}")


def check_bool(name: str, value: Tensor) -> None:
    """Masks are ``torch.bool``: a float mask would silently multiply instead of select."""
    if value.dtype != torch.bool:
        raise ValueError(f"{name}: expected dtype torch.bool, got {value.dtype}")


def check_floating(name: str, value: Tensor) -> None:
    """Check that ``value`` has a floating dtype."""
    if not value.is_floating_point():
        raise ValueError(f"{name}: expected a floating dtype, got {value.dtype}")


def check_index(name: str, value: Tensor) -> None:
    """Check an integer index tensor with non-negative entries."""
    if value.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name}: expected dtype torch.int64, got {value.dtype}")
    if value.numel() and int(value.min()) < 0:
        raise ValueError(f"{name}: expected non-negative indices, got min {int(value.min())}")


def check_finite_where(name: str, value: Tensor, mask: Tensor) -> None:
    """Padding may hold NaN; positions the mask selects may not (a tensor without data, on ``meta``, has none)."""
    if value.is_meta:
        return
    bad = mask & ~torch.isfinite(value)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{name}: non-finite value at unmasked position {where}; only padding may hold NaN/inf")


def check_band(name: str, band: tuple[float, float]) -> tuple[float, float]:
    """A success-rate band ``(low, high)`` with ``0 <= low <= high <= 1``."""
    if not (isinstance(band, Sequence) and len(band) == 2):
        raise ValueError(f"{name}: expected a pair (low, high), got {band!r}")
    try:
        low, high = float(band[0]), float(band[1])
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a pair of numbers (low, high), got {band!r}") from None
    if not (0.0 <= low <= high <= 1.0):
        raise ValueError(f"{name}: expected 0 <= low <= high <= 1, got ({low}, {high})")
    return low, high


def check_number(
    name: str,
    value: object,
    *,
    ge: float | None = None,
    gt: float | None = None,
    lt: float | None = None,
) -> float:
    """A finite real number (hyperparameter), optionally bounded: ``>= ge``, ``> gt``, ``< lt``; returned as float.

    NaN is refused explicitly: every comparison with NaN is false, so a bare ``if x < 0: raise`` lets it through.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: expected a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name}: expected a finite number, got {number}")
    if ge is not None and not number >= ge:
        raise ValueError(f"{name}: expected >= {ge}, got {number}")
    if gt is not None and not number > gt:
        raise ValueError(f"{name}: expected > {gt}, got {number}")
    if lt is not None and not number < lt:
        raise ValueError(f"{name}: expected < {lt}, got {number}")
    return number


def check_positive_int(name: str, value: int) -> int:
    """An integer >= 1 (for example the number of judge votes ``m``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    return value
