"""Game sets that cover ALFWorld's six task types: equal shares (training) or in proportion (evaluation).

The games of a split are sorted by path, and the path starts with the task type: the first games of a split hold only
one or two types (the easiest). Every set built here is drawn per type with a seeded RNG instead.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rlanything_core.envs.alfworld.data import AlfworldGame

__all__ = ["games_per_type", "proportional_games"]


def _by_type(games: Sequence[AlfworldGame], seed: int) -> dict[str, list[AlfworldGame]]:
    groups: dict[str, list[AlfworldGame]] = {}
    for g in games:
        groups.setdefault(g.task_type, []).append(g)
    rng = random.Random(seed)
    for task_type in sorted(groups):
        rng.shuffle(groups[task_type])
    return dict(sorted(groups.items()))


def games_per_type(games: Sequence[AlfworldGame], per_type: int, *, seed: int = 0) -> list[AlfworldGame]:
    """Up to ``per_type`` games of every task type (all of a type that has fewer), seeded, interleaved by type.

    Raises:
        ValueError: ``per_type < 0``.
    """
    if per_type < 0:
        raise ValueError(f"per_type: expected >= 0, got {per_type}")
    groups = [g[:per_type] for g in _by_type(games, seed).values()]
    return [g[k] for k in range(per_type) for g in groups if k < len(g)]


def proportional_games(games: Sequence[AlfworldGame], total: int, *, seed: int = 0) -> list[AlfworldGame]:
    """``total`` games whose task types follow the split's proportions, seeded.

    Largest remainders decide the rounding; every type gets at least one game when ``total`` allows.

    Raises:
        ValueError: ``total`` is negative or larger than the number of games.
    """
    if not 0 <= total <= len(games):
        raise ValueError(f"total: expected 0..{len(games)} games, got {total}")
    groups = _by_type(games, seed)
    if total == 0:
        return []
    n = len(games)
    quotas = {t: total * len(g) / n for t, g in groups.items()}
    counts = {t: int(q) for t, q in quotas.items()}
    if total >= len(groups):
        counts = {t: max(1, c) for t, c in counts.items()}
    order = sorted(groups, key=lambda t: (counts[t] - quotas[t], t))  # most under-served first
    k = 0
    while sum(counts.values()) < total:
        t = order[k % len(order)]
        if counts[t] < len(groups[t]):
            counts[t] += 1
        k += 1
    while sum(counts.values()) > total:  # the at-least-one rule overshot: trim the most over-served
        t = max(groups, key=lambda t: (counts[t] - quotas[t], t))
        counts[t] -= 1
    picked = [g[: counts[t]] for t, g in groups.items()]
    width = max(len(p) for p in picked)
    return [p[k] for k in range(width) for p in picked if k < len(p)]
