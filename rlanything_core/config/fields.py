"""Fields of a config dataclass that carry their range, and the range check (a pure function).

A schema dataclass says each key's type (OmegaConf checks it on merge); :func:`bounded` adds its range to the field's
``metadata`` (``ge``, ``gt``, ``lt``), read by :func:`~rlanything_core.config.schema.check_node`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["bounded", "describe_bounds", "within"]

_SYMBOLS = {"ge": ">=", "gt": ">", "lt": "<"}


def bounded(default: Any = dataclasses.MISSING, *, ge: float | None = None, gt: float | None = None,
            lt: float | None = None) -> Any:  # fmt: skip
    """A dataclass field with ``default`` (a list is copied per instance; ``MISSING``: required) and its range."""
    metadata = {name: v for name, v in (("ge", ge), ("gt", gt), ("lt", lt)) if v is not None}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def within(value: float, bounds: dict[str, float]) -> bool:
    """Whether ``value`` is finite and satisfies every bound (``{"ge": 1}``: ``value >= 1``)."""
    checks = {"ge": lambda v, b: v >= b, "gt": lambda v, b: v > b, "lt": lambda v, b: v < b}
    return math.isfinite(value) and all(checks[name](value, bound) for name, bound in bounds.items())


def describe_bounds(bounds: dict[str, float]) -> str:
    """``{"ge": 1, "lt": 2}`` -> ``">= 1, < 2"``."""
    return ", ".join(f"{_SYMBOLS[name]} {bound}" for name, bound in bounds.items())
