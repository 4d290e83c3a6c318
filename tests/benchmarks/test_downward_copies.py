"""``benchmarks/downward_copies.py``: TextWorld's own library loads leave a mapped copy per engine, the hand-on none."""

from __future__ import annotations

import pytest

from benchmarks.downward_copies import measure, textworld_load_lib

pytestmark = [pytest.mark.alfworld]


def test_textworld_mode_leaves_a_copy_per_engine_and_the_hand_on_none() -> None:
    from rlanything_core.envs.alfworld import list_games

    games = [g.game_file for g in list_games("valid_seen")[:2]]
    measure(games)  # the hand-on installed, a copy loaded and free
    with textworld_load_lib():
        assert measure(games)["copies"] == 2
    assert measure(games)["copies"] == 0
