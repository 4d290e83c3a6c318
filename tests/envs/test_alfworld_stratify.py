"""Game sets over the six task types: equal shares and proportional draws, seeded."""

from collections import Counter
from pathlib import Path

import pytest

from rlanything_core.envs.alfworld.data import AlfworldGame, AlfworldSplit
from rlanything_core.envs.alfworld.stratify import games_per_type, proportional_games


def _games(counts: dict[str, int]) -> list[AlfworldGame]:
    return [AlfworldGame(Path(f"/g/{t}-{k}/trial/game.tw-pddl"), t, AlfworldSplit.VALID_SEEN)
            for t, n in sorted(counts.items()) for k in range(n)]


COUNTS = {"simple": 35, "clean": 27, "cool": 25, "two": 24, "heat": 16, "light": 13}


def test_equal_shares_cover_every_type_and_are_seeded() -> None:
    picked = games_per_type(_games(COUNTS), 4, seed=1)
    assert Counter(g.task_type for g in picked) == {t: 4 for t in COUNTS}
    assert picked == games_per_type(_games(COUNTS), 4, seed=1) != games_per_type(_games(COUNTS), 4, seed=2)
    assert Counter(g.task_type for g in games_per_type(_games({"a": 2, "b": 9}), 5)) == {"a": 2, "b": 5}


def test_proportional_draws_follow_the_split_and_keep_every_type() -> None:
    picked = proportional_games(_games(COUNTS), 32, seed=0)
    counts = Counter(g.task_type for g in picked)
    assert sum(counts.values()) == 32 == len(set(picked))
    total = sum(COUNTS.values())
    for t, n in COUNTS.items():
        assert abs(counts[t] - 32 * n / total) < 1.0
    small = Counter(g.task_type for g in proportional_games(_games(COUNTS), 6))
    assert small == {t: 1 for t in COUNTS}
    with pytest.raises(ValueError, match="total"):
        proportional_games(_games(COUNTS), 1000)
