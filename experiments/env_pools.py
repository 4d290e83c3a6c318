"""Environment worker pools shared by every run built in one process (``ablate.py`` runs all arms and seeds in one)."""

from __future__ import annotations

import atexit
from typing import Any

from rlanything_core.envs.miniwob.pool import BrowserEnvPool
from rlanything_core.envs.parallel import EnvPool

__all__ = ["close_shared_env_pools", "shared_env_pool"]

_SHARED_POOLS: dict[tuple[Any, int], Any] = {}
atexit.register(lambda: close_shared_env_pools())


def shared_env_pool(factory: Any, workers: int, *, kind: str = "text") -> Any:
    """One :class:`EnvPool` per ``(factory, workers)`` in this process, reused by every run built here.

    ``ablate.py`` runs all arms and seeds in one process: sharing the pools spares a worker start per run, and each
    worker keeps its loaded games (ALFWorld's idle-engine cache), so a game is parsed once for the whole ablation.
    Runs are sequential, and every collection starts a new batch, so sharing does not couple them.
    ``kind="browser"``: workers that own browsers (MiniWoB++), killed with their whole process group.
    """
    key = (factory, workers)
    if key not in _SHARED_POOLS:
        if kind == "browser":
            _SHARED_POOLS[key] = BrowserEnvPool(factory, num_workers=workers)
        else:
            _SHARED_POOLS[key] = EnvPool(factory, num_workers=workers)
    return _SHARED_POOLS[key]


def close_shared_env_pools() -> None:
    """Stop the workers of every shared pool."""
    for pool in _SHARED_POOLS.values():
        pool.close()
    _SHARED_POOLS.clear()
