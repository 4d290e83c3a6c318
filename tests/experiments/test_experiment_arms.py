"""The pre-registered experiments' arms (rlanything_core/conf/arm/e*.yaml): each builds and runs one tiny ALFWorld
iteration, and its step records show the experiment's mechanism at work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from hydra import compose, initialize_config_dir

from rlanything_core.collect.expert_judge import ExpertLabelJudge
from rlanything_core.conf import CONF_DIR
from rlanything_core.loop.step_records import read_step_records
from rlanything_core.records import AgentStep, Episode

ARMS = ("e2_m9", "e2_expected_vote", "e3_expert_exact", "e3_expert_flipped", "e4_policy_judge_state_summary",
        "e4_full_state_summary")  # fmt: skip


def _run(arm: str, run_dir: Path) -> Any:
    from rlanything_core.assembly import build_run

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train", overrides=["+setting=alfworld", "+profile=smoke", "model=minilm-scorer", f"arm={arm}",
                                          "iterations=1", "setting.max_steps=6", "eval.games=1",
                                          "eval.oracle_episodes=0", "eval.judge_every=0", f"run_dir={run_dir}"])
    run = build_run(cfg)
    run.loop.run()
    run.loop.driver.pool.close()
    return run, read_step_records(run_dir)


@pytest.mark.alfworld
@pytest.mark.slow
@pytest.mark.parametrize("arm", ARMS)
def test_each_experiment_arm_builds_and_runs_one_iteration(arm: str, tmp_path: Path) -> None:
    run, df = _run(arm, tmp_path / arm)
    assert run.loop.completed == 1 and len(df) > 0
    history = run.loop.update_history[-1]
    votes = df["votes"].tolist()
    if arm == "e2_m9":
        assert all(len(v) == 9 for v in votes)
    else:
        assert all(len(v) == 3 for v in votes)
    if arm == "e2_expected_vote":  # R reads 2 P(+1) - 1, not the sampled votes' mean
        expected = df["outcome"] + (2 * df["p_plus"] - 1)
        assert torch.allclose(torch.tensor(df["reward"].to_numpy()), torch.tensor(expected.to_numpy()), atol=1e-5)
        sampled = df["outcome"] + df["vote_mean"]
        assert not torch.allclose(torch.tensor(df["reward"].to_numpy()), torch.tensor(sampled.to_numpy()), atol=1e-3)
    if arm == "e3_expert_exact":  # every vote is the expert label, where there is one
        labelled = df[df["expert_agrees"].notna()]
        assert len(labelled) > 0
        for v, agrees in zip(labelled["votes"], labelled["expert_agrees"]):
            assert set(v) == {1 if int(agrees) else -1}
        assert run.loop.judge_update is None and "judge/updates" not in history
    if arm == "e3_expert_flipped":
        labelled = df[df["expert_agrees"].notna()]
        assert set(labelled["p_plus"].round(6)) <= {0.36, 0.64}
    if arm.startswith("e4_"):
        votes_sampler = run.loop.driver.judge_collector.votes
        episode = Episode("g", 0, "put a mug in sink.", [AgentStep("o", ["look"], [], [], [], "look", "look")])
        assert "holding: nothing" in votes_sampler.render_step(episode, episode.steps[0])[-1]["content"]
        assert history.get("judge/updates", 0.0) >= 1


def test_flipped_votes_disagree_with_the_label_at_the_given_rate() -> None:
    judge = ExpertLabelJudge(flip_prob=0.2, seed=3)
    votes = judge.sample(None, [[{"role": "user", "content": "agrees"}]] * 4000, list(range(4000)))
    flipped = sum(v.vote < 0 for v in votes) / len(votes)
    assert 0.18 < flipped < 0.22 and all(v.p_plus == pytest.approx(0.8) for v in votes)
    unknown = judge.sample(None, [[{"role": "user", "content": "unknown"}]], [0])[0]
    assert unknown.p_plus == 0.5
    with pytest.raises(ValueError, match="flip_prob"):
        ExpertLabelJudge(flip_prob=0.7)
