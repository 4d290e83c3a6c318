"""The ALFWorld training pool is drawn like the evaluation: every task type in proportion, none of its games."""

from __future__ import annotations

from collections import Counter

import pytest

pytestmark = pytest.mark.alfworld


def _compose(*overrides: str):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("ablate", overrides=["+setting=alfworld", *overrides])


def test_the_default_pool_covers_the_six_task_types_in_proportion_and_no_evaluation_game() -> None:
    from rlanything_core.assembly.agent import alfworld_games
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.sampling import proportional_allocation
    from rlanything_core.settings.alfworld import game_id, training_pool_summary

    cfg = _compose()
    train, evals, root = alfworld_games(cfg)
    assert len(train) == cfg.setting.train_games == 32
    types = Counter(g.task_type for g in train)
    # the first 32 games of valid_train (the pool until 2026-11-26) hold two types: 19 look_at_obj, 13 pick_and_place
    assert len(types) == 6, types
    split = Counter(g.task_type for g in list_games(cfg.setting.train_split, root))
    assert dict(types) == {k: v for k, v in proportional_allocation(dict(split), 32).items() if v}
    evaluated = {game_id(g.game_file) for games in evals.values() for g in games}
    assert not evaluated & {game_id(g.game_file) for g in train}
    summary = training_pool_summary(train)
    assert summary["games"] == 32 and summary["per_type"] == dict(sorted(types.items()))
    assert summary["ids"] == [game_id(g.game_file) for g in train]
    assert [str(g.game_file) for g in alfworld_games(cfg)[0]] == [str(g.game_file) for g in train]  # deterministic
    other = alfworld_games(_compose("setting.train_sample_seed=1"))[0]
    assert [g.game_file for g in other] != [g.game_file for g in train]


def test_a_pool_never_holds_an_evaluation_game_and_a_too_large_one_is_refused() -> None:
    from rlanything_core.assembly.agent import alfworld_games
    from rlanything_core.config import ConfigError
    from rlanything_core.settings.alfworld import game_id

    # training on valid_seen itself: the evaluated games are left out of the pool
    cfg = _compose("setting.train_split=valid_seen", "setting.train_games=null", "eval.games=64")
    train, evals, _ = alfworld_games(cfg)
    evaluated = {game_id(g.game_file) for g in evals["in_distribution"]}
    assert len(train) == 140 - 64 and not evaluated & {game_id(g.game_file) for g in train}
    with pytest.raises(ConfigError, match="setting.train_games"):
        alfworld_games(_compose("setting.train_split=valid_seen", "setting.train_games=100", "eval.games=64"))
