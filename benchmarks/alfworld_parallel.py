"""ALFWorld env steps per second over :class:`~rlanything_core.envs.parallel.EnvPool` with 1 and 2 worker processes.

Used by ``python -m benchmarks.bench_rollouts`` (moved out of ``rlanything_core/envs/parallel.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from rlanything_core.envs.parallel import EnvPool

__all__ = ["benchmark_alfworld_parallel"]


def _run_random(pool: EnvPool, games: Sequence[Any], steps: int, seed: int) -> tuple[int, float]:
    """Reset, then ``steps`` rounds of seeded random admissible actions; returns (env steps, seconds stepping)."""
    rng = random.Random(seed)
    obs = pool.reset_all(games)
    admissible = [o.admissible_actions for o in obs]
    total, elapsed = 0, 0.0
    for _ in range(steps):
        actions = [rng.choice(a) if a else None for a in admissible]
        start = time.perf_counter()
        results = pool.step_all(actions)
        elapsed += time.perf_counter() - start
        total += sum(a is not None for a in actions)
        admissible = [r.admissible_actions if not r.done else () for r in results]
    return total, elapsed


def benchmark_alfworld_parallel(
    *,
    num_games: int = 8,
    steps: int = 15,
    split: str = "valid_seen",
    data_root: str | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """ALFWorld env steps per second with 1 and with 2 worker processes (same games, same seeded actions).

    Args:
        num_games: episodes per batch (every 8th game of the split's filtered list, wrapping around).
        steps: rounds of ``step_all`` (random admissible actions; no step limit, so episodes rarely end).
        split: ALFWorld split.
        data_root: see :func:`rlanything_core.envs.alfworld.data.resolve_data_root`.
        seed: seed of the action choices.

    Returns:
        ``{"steps_per_s_1", "steps_per_s_2", "speedup"}`` (speedup = steps_per_s_2 / steps_per_s_1); only
        ``step_all`` time counts, resets excluded.
    """
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import AlfworldEnvFactory

    listed = list_games(split, data_root)
    games = [listed[(8 * i) % len(listed)] for i in range(num_games)]
    rates: dict[int, float] = {}
    for workers in (1, 2):
        with EnvPool(AlfworldEnvFactory(max_episode_steps=None), num_workers=workers) as pool:
            total, elapsed = _run_random(pool, games, steps, seed)
        rates[workers] = total / max(elapsed, 1e-9)
    return {"steps_per_s_1": rates[1], "steps_per_s_2": rates[2], "speedup": rates[2] / rates[1]}
