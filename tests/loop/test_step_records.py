"""Per-step training records: written by a real ALFWorld run, read by one function, resume-safe, expert-labelled."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from hydra import compose, initialize_config_dir

from rlanything_core.conf import CONF_DIR
from rlanything_core.loop.step_records import COLUMNS, StepRecorder, read_step_records, step_record_rows
from rlanything_core.records import AgentStep, Episode, JudgeSample


def _step(action: str, votes: list[int], p: float | None) -> AgentStep:
    return AgentStep("obs", [action, "look"], [1], [2], [-0.1], action, action,
                     judge=[JudgeSample(v, str(v), p_plus=p) for v in votes])  # fmt: skip


class _Labeller:
    def task_type(self, task: Any) -> str:
        return f"type-{task}"

    def reference_actions(self, items: Any) -> list[list[str | None]]:
        return [["go to a", None][: len(a)] for _, a in items]  # the second state unlabelled


def test_records_round_trip_with_types_and_absent_values(tmp_path: Path) -> None:
    eps = [Episode("g0", 0, "goal", [_step("go to a", [1, -1, 1], 0.7), _step("look", [0, -1, -1], 0.2)], won=True),
           Episode("g0", 0, "goal", [_step("look", [-1, -1, -1], 0.1)], won=False)]  # fmt: skip
    adv = torch.tensor([[0.5, -0.25], [-1.0, 0.0]])
    reward = torch.tensor([[4 / 3, 1 / 3], [-2.0, 0.0]])
    path = StepRecorder(tmp_path, _Labeller()).record(eps, ["A", "A"], iteration=3, rank=0, advantages=adv,
                                                      step_reward=reward)  # fmt: skip
    assert path.name == "iter_000003_rank0.csv.gz"
    df = read_step_records(tmp_path)
    assert list(df.columns) == list(COLUMNS) and len(df) == 3
    first = df.iloc[0]
    assert first["votes"] == (1, -1, 1) and first["vote_mean"] == pytest.approx(1 / 3)
    assert first["p_plus"] == pytest.approx(0.7) and first["reward"] == pytest.approx(4 / 3)
    assert first["advantage"] == 0.5 and first["outcome"] == 1.0 and first["task_type"] == "type-A"
    assert first["expert_action"] == "go to a" and int(first["expert_agrees"]) == 1
    assert df.iloc[1]["expert_action"] is None and df["expert_agrees"].isna().tolist() == [False, True, False]
    assert int(df.iloc[2]["expert_agrees"]) == 0 and df.iloc[2]["rollout"] == 1  # second rollout of group 0
    assert str(df["expert_agrees"].dtype) == "Int8"


def test_rows_refuse_grids_that_do_not_match_the_episodes() -> None:
    eps = [Episode("g", 0, "goal", [_step("look", [1], 0.5)])]
    with pytest.raises(ValueError, match="advantages"):
        step_record_rows(eps, iteration=0, rank=0, advantages=torch.zeros(2, 1), step_reward=None, task_types=[""],
                         reference=None)  # fmt: skip


def test_reading_a_run_without_records_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="run_dir: no step records"):
        read_step_records(tmp_path)


# ------------------------------------------------------------------------------------------------ a real run
def _cfg(run_dir: Path, *overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("train", overrides=["+setting=alfworld", "+profile=smoke", "model=minilm-scorer",
                                           "arm=policy_judge", "setting.max_steps=8", "eval.games=1",
                                           "eval.oracle_episodes=0", "eval.judge_every=0", f"run_dir={run_dir}",
                                           *overrides])  # fmt: skip


@pytest.mark.alfworld
@pytest.mark.slow
def test_a_real_run_records_every_step_labelled_by_the_expert_and_a_resume_replaces_rows(tmp_path: Path) -> None:
    from rlanything_core.assembly import build_run
    from rlanything_core.envs.alfworld.expert_agreement import alfworld_task_type, expert_commands

    run_dir = tmp_path / "run"
    first = build_run(_cfg(run_dir, "iterations=1")).loop
    first.run()
    first.driver.pool.close()  # the writer lock: the next run in this process takes it
    ckpt = run_dir / "checkpoints"
    shutil.copy(ckpt / "last.ckpt", tmp_path / "after_1.ckpt")
    run = build_run(_cfg(run_dir, "iterations=2"))  # resumed: iteration 1
    steps_seen = [len(read_step_records(run_dir))]
    original = run.loop.driver.rows

    def rows(rollouts: Any) -> Any:  # the steps the iteration trained on, counted beside the records
        steps_seen.append(sum(len(e.steps) for e in rollouts.episodes))
        return original(rollouts)

    run.loop.driver.rows = rows
    run.loop.run()
    run.loop.driver.pool.close()
    df = read_step_records(run_dir)
    assert sorted(df["iteration"].unique()) == [0, 1]
    assert [int((df["iteration"] == k).sum()) for k in (0, 1)] == steps_seen  # every step, once
    assert all(len(v) == 3 for v in df["votes"]) and df["p_plus"].between(0, 1).all()
    assert df["reward"].notna().all() and df["advantage"].notna().all()
    assert all(h["rollout/time/records_s"] > 0 for h in run.loop.update_history)
    # the expert label, checked against the expert replaying each episode on its real game
    pool = {t.task_id: t for t in run.loop.driver.pool.tasks.values()}
    for _, ep in df.groupby(["iteration", "group", "rollout"]):
        game = pool[ep["game"].iloc[0]].data["game_file"]
        assert ep["task_type"].iloc[0] == alfworld_task_type(game) != ""
        commands = expert_commands(game, list(ep["action"]))
        assert list(ep["expert_action"]) == commands
        assert [None if pd_na else bool(v) for v, pd_na in zip(ep["expert_agrees"], ep["expert_agrees"].isna())] == [
            None if c is None else c == a for c, a in zip(commands, ep["action"])
        ]
    # a resume from the checkpoint after iteration 1 replays iteration 1: its rows are replaced, none added or lost
    before = df
    shutil.copy(tmp_path / "after_1.ckpt", ckpt / "last.ckpt")
    replay = build_run(_cfg(run_dir, "iterations=2")).loop
    replay.run()
    replay.driver.pool.close()
    after = read_step_records(run_dir)
    assert len(after) == len(before)
    assert after[["iteration", "group", "rollout", "step"]].duplicated().sum() == 0
    assert after[after["iteration"] == 0].equals(before[before["iteration"] == 0])
