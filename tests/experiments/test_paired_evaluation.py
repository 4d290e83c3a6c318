"""Every arm and seed is evaluated on the same games; every arm of a seed with the same episode seeds (the table's
statistics pair them)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from _runs import REPO, env

pytestmark = pytest.mark.alfworld


def _compose(*overrides: str):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("ablate", overrides=["+setting=alfworld", *overrides])


def test_arms_and_seeds_get_the_same_stratified_games_and_each_seed_its_own_episode_seeds() -> None:
    from rlanything_core.assembly.agent import alfworld_games, evaluation_episode_seed

    default = _compose()
    assert default.eval.games is None  # whole splits: every game of valid_seen and valid_unseen
    plans, episode_seeds = {}, {}
    for arm in ("outcome_only", "full"):
        for seed in (0, 1):
            cfg = _compose(f"arm={arm}", f"seed={seed}")
            _, evals, _ = alfworld_games(cfg)
            plans[arm, seed] = {k: [str(g.game_file) for g in v] for k, v in evals.items()}
            episode_seeds[arm, seed] = evaluation_episode_seed(cfg)
    assert len(set(json.dumps(p, sort_keys=True) for p in plans.values())) == 1  # the same games everywhere
    # the same episodes for every arm of a seed (paired); another draw per seed (independent "before" rows)
    assert episode_seeds["outcome_only", 0] == episode_seeds["full", 0] != episode_seeds["full", 1]
    assert episode_seeds["outcome_only", 1] == episode_seeds["full", 1]
    shared = _compose("seed=1", "eval.per_seed_episodes=false")
    assert evaluation_episode_seed(shared) == int(shared.eval.seed)
    games = plans["full", 0]
    assert set(games) == {"in_distribution", "out_of_distribution"}
    for names, size in zip(games.values(), (140, 134)):
        types = Counter(Path(n).parent.parent.name.split("-", 1)[0] for n in names)
        assert len(names) == len(set(names)) == size and len(types) == 6  # all six task types
    drawn = alfworld_games(_compose("eval.games=64"))[1]["in_distribution"]
    other = alfworld_games(_compose("eval.games=64", "eval.sample_seed=1"))[1]["in_distribution"]
    assert len(drawn) == 64 and len({g.task_type for g in drawn}) == 6
    assert [str(g.game_file) for g in other] != [str(g.game_file) for g in drawn]


@pytest.mark.slow
def test_two_arms_of_one_seed_play_identical_evaluation_episodes(tmp_path: Path) -> None:
    """The same starting policy evaluated from two arms' configs plays the same episodes, game by game."""
    outcomes = {}
    for arm in ("outcome_only", "full"):
        run_dir = tmp_path / arm
        cmd = [sys.executable, "-m", "experiments.train", "+setting=alfworld", f"arm={arm}", "seed=0",
               f"run_dir={run_dir}", "eval_only=true", "eval.games=2", "eval.runs=2", "eval.oracle_episodes=1",
               "setting.eval_max_steps=3", "setting.train_games=2", "setting.env_workers=1",
               "progress=false"]  # fmt: skip
        proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        record = json.loads((run_dir / "eval_outcomes.json").read_text())
        assert record["iteration"] == 0
        outcomes[arm] = record["outcomes"]
    assert outcomes["outcome_only"] == outcomes["full"]  # same games, runs, seeds: the same actions and results
    keys = [(o["split"], o["task_id"], o["run"]) for o in outcomes["full"]]
    assert len(keys) == len(set(keys)) == 2 * 2 * 2  # splits x games x runs
    assert all(o["steps"] <= 3 for o in outcomes["full"])
