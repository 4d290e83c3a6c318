"""The OmegaConf resolvers the shipped configs use, registered when :mod:`rlanything_core.assembly` is imported.

``${add:a,b}`` is an integer sum (the judge's seed is ``${add:${seed},1000}``). Resolution happens when a value is
read, so any program that imports this package before reading a composed config (``experiments/train.py``,
``ablate.py``, ``benchmarks.gpu_check``, the tests) resolves it without registering anything itself.
"""

from __future__ import annotations

from omegaconf import OmegaConf

__all__ = ["register_resolvers"]


def _add(a: object, b: object) -> int:
    return int(str(a)) + int(str(b))


def register_resolvers() -> None:
    """Register ``add`` with OmegaConf (idempotent: a second call replaces it with itself)."""
    OmegaConf.register_new_resolver("add", _add, replace=True)
