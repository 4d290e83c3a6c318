"""The judge study's own parts (``scripts/judge_study.py``): the planner-label targets, the intervals, the labeller.

The study's run objects are the package's (``build_run`` on a committed config), tested where they live; here are the
three things the study adds.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from rlanything_core.loop.judge_probe import JudgeProbe, save_probes
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.types import RolloutBatch
from scripts.judge_study import (
    DEFAULT_RUN,
    _checkpoint_judge,
    held_out_games,
    planner_targets,
    split_batches,
    step_probability,
    study_config,
    study_sets,
    summarize,
)


def _step(votes: list[int]) -> AgentStep:
    return AgentStep(
        observation="obs",
        admissible_actions=["look"],
        prompt_token_ids=[1, 2],
        token_ids=[3],
        logprobs=[-0.5],
        response="r",
        action="look",
        judge=[JudgeSample(v, f"\\boxed{{{v}}}", [7, 7], [8], [-0.1]) for v in votes],
    )


def _batch() -> RolloutBatch:
    episodes = [
        Episode("a", 0, "g", [_step([1, -1, 1]), _step([1, -1, -1]), _step([-1, -1, 1])], won=False),
        Episode("a", 0, "g", [_step([1, 1, -1])], won=True),
    ]
    return RolloutBatch.from_episodes(episodes, pad_id=0, num_votes=3)


def test_planner_targets_push_votes_toward_the_label_with_each_class_at_half_the_weight() -> None:
    labels = [[1, -1, -1], [-1]]  # one progress step of four
    targets = planner_targets(_batch(), labels)
    votes = torch.tensor(
        [[[1, -1, 1], [1, -1, -1], [-1, -1, 1]], [[1, 1, -1], [0, 0, 0], [0, 0, 0]]], dtype=targets.dtype
    )
    label = torch.tensor([[1, -1, -1], [-1, 0, 0]], dtype=targets.dtype)
    # a vote that agrees with the step's label gets a positive target, one that disagrees a negative one
    agree = (votes * label.unsqueeze(-1)) > 0
    assert bool((targets[agree] > 0).all()) and bool((targets[(votes * label.unsqueeze(-1)) < 0] < 0).all())
    # standardized over the m votes: each step's targets sum to 0
    assert torch.allclose(targets.sum(-1), torch.zeros(2, 3, dtype=targets.dtype), atol=1e-6)
    # the one progress step weighs as much as the three others together (each class half of the 4 steps)
    size = targets.abs().amax(-1)
    assert math.isclose(float(size[0, 0]) / float(size[0, 1]), 3.0, rel_tol=1e-5)


def test_planner_targets_refuse_labels_that_do_not_fit_the_steps() -> None:
    with pytest.raises(ValueError, match="rollout 1 has 1 steps but 2 labels"):
        planner_targets(_batch(), [[1, -1, -1], [-1, 1]])


def test_intervals_hold_the_point_and_a_perfect_judge_scores_one() -> None:
    labels = [[1, -1, -1, -1], [-1, 1, -1], [1, -1], [-1, -1, 1, 1]]
    perfect = summarize(labels, [[0.9 if y > 0 else 0.1 for y in e] for e in labels], labels, seed=0)
    assert perfect["bacc"] == 1.0 and perfect["auc"] == 1.0 and perfect["bacc_lo"] == 1.0
    noisy_votes = [[1, 1, -1, -1], [-1, 1, 1], [-1, -1], [-1, 1, 1, -1]]
    noisy = summarize(noisy_votes, [[0.5 + 0.1 * v for v in e] for e in noisy_votes], labels, seed=0)
    assert noisy["bacc_lo"] <= noisy["bacc"] <= noisy["bacc_hi"] and noisy["bacc"] < 1.0
    assert noisy["auc_lo"] <= noisy["auc"] <= noisy["auc_hi"]
    assert (noisy["steps"], noisy["progress_steps"], noisy["episodes"]) == (13, 5, 4)


def test_held_out_games_are_a_seeded_half_and_never_train() -> None:
    ids = [f"game{i}" for i in range(10)]
    held = held_out_games(ids + ids, seed=0)
    assert len(held) == 5 and held == held_out_games(list(reversed(ids)), seed=0) != held_out_games(ids, seed=1)
    episodes = [Episode(g, i, "g", [_step([1])], won=False) for i, g in enumerate(ids)]
    batches = [JudgeProbe("iteration_0", episodes[:6], [[1]] * 6), JudgeProbe("iteration_1", episodes[6:], [[-1]] * 4)]
    train, held_probe = split_batches(batches, held)
    assert {e.task_id for b in train for e in b.episodes} == set(ids) - held
    assert {e.task_id for e in held_probe.episodes} == held and len(held_probe.labels) == 5


def test_a_runs_judge_is_read_from_its_loop_checkpoint(tmp_path: Path) -> None:
    # a loop checkpoint holds both models under "state_dict" (LoopModels: policy.*, judge.*)
    weights = {
        "policy.head.weight": torch.ones(2),
        "judge.head.weight": torch.full((1, 3), 2.0),
        "judge.head.bias": torch.zeros(1),
    }
    torch.save({"state_dict": weights, "loop": {"completed": 12}}, tmp_path / "last.ckpt")
    judge = _checkpoint_judge(str(tmp_path / "last.ckpt"))
    assert set(judge) == {"head.weight", "head.bias"} and torch.equal(
        judge["head.weight"], weights["judge.head.weight"]
    )


def test_a_variant_changes_the_runs_resolved_config_by_name_and_a_wrong_key_is_refused(tmp_path: Path) -> None:
    init = tmp_path / "policy.pt"
    init.write_bytes(b"")
    cfg = study_config(DEFAULT_RUN, tmp_path, "consistency_lr", str(init), ["optim.judge_optimizer.lr=3e-4"])
    assert cfg.optim.judge_optimizer.lr == pytest.approx(3e-4)
    assert cfg.run_dir == str(tmp_path / "consistency_lr") and not cfg.resume
    with pytest.raises(SystemExit, match="optim.judge_lr_typo"):
        study_config(DEFAULT_RUN, tmp_path, "x", str(init), ["optim.judge_lr_typo=1"])
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        study_config(DEFAULT_RUN, tmp_path, "x", str(init), ["optim.judge_optimizer.lr"])


def test_p_plus_is_read_from_the_sign_a_vote_drew() -> None:
    assert step_probability(JudgeSample(1, "+1", [], [1], [math.log(0.8)])) == pytest.approx(0.8)
    assert step_probability(JudgeSample(-1, "-1", [], [0], [math.log(0.8)])) == pytest.approx(0.2)


def test_another_probe_files_sets_are_named_by_the_file_beside_the_held_out_games(tmp_path: Path) -> None:
    ids = [f"game{i}" for i in range(4)]
    episodes = [Episode(g, i, "g", [_step([1])], won=False) for i, g in enumerate(ids)]
    save_probes(tmp_path / "rollouts.json", [JudgeProbe("iteration_0", episodes, [[1], [-1], [1], [-1]])])
    bigger = save_probes(tmp_path / "probe_16.json", [JudgeProbe("in_distribution", episodes[:1], [[1]])])
    train, sets = study_sets(tmp_path, 0, bigger)
    assert list(sets) == ["held_out", "in_distribution (probe_16)"]
    assert len(sets["held_out"].episodes) == 2 and sum(len(b.episodes) for b in train) == 2
