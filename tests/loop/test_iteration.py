from dataclasses import fields
from typing import ClassVar

import pytest
import torch
from torch import Tensor

from rlanything_core.advantages.filters import JUDGE_BAND, TaskBandFilter
from rlanything_core.advantages.functional import integrated_step_reward
from rlanything_core.advantages.integrators import IntegratedIntegrator, OutcomeOnlyIntegrator, StepOnlyIntegrator
from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.loop.iteration import IterationData, build_iteration, empty_iteration
from rlanything_core.losses.consistency import ConsistencyRewardLoss
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.types import StepBatch, collate


def _step(votes: list[int], prompt_len: int = 3) -> AgentStep:
    return AgentStep(
        observation="o",
        admissible_actions=["a"],
        prompt_token_ids=list(range(1, prompt_len + 1)),
        token_ids=[9, 9],
        logprobs=[],
        response="a",
        action="a",
        judge=[JudgeSample(v, "", [5, 6], [7], []) for v in votes],
    )


def _group(group: int, outcomes: list[bool], steps: int = 2) -> list[Episode]:
    return [
        Episode(f"t{group}", group, "g", [_step([1 if won else -1, 1, -1 if k else 1]) for k in range(steps)], won=won)
        for won in outcomes
    ]


def test_policy_rows_come_only_from_tasks_in_band_with_nonzero_advantage() -> None:
    # task 0: 2 of 4 succeed (in band); task 1: all succeed (out of the policy band)
    episodes = _group(0, [True, False, True, False]) + _group(1, [True, True, True, True])
    data = build_iteration(episodes, iteration=0, integrator=OutcomeOnlyIntegrator(), pad_id=0)
    assert data.policy is not None
    assert set(data.policy.group.tolist()) == {0}
    assert data.policy.num_rows == 8  # 4 rollouts x 2 steps, all with advantage +-1
    assert torch.allclose(data.policy.advantages.abs(), torch.ones(8))
    assert data.judge is None  # no judge loss given
    assert data.metrics["success_rate"] == 0.75


def test_no_policy_rows_when_every_task_is_solved_or_failed() -> None:
    episodes = _group(0, [False, False]) + _group(1, [True, True])
    data = build_iteration(episodes, iteration=3, integrator=OutcomeOnlyIntegrator(), pad_id=0)
    assert data.policy is None and data.iteration == 3


def test_judge_rows_index_the_consistency_loss_row_order() -> None:
    episodes = _group(0, [True, False, True, False]) + _group(1, [True, True, True, True])
    loss = ConsistencyRewardLoss()
    data = build_iteration(
        episodes, iteration=0, integrator=IntegratedIntegrator(), pad_id=0, judge_targets=loss.target_builder
    )
    assert data.judge is not None
    batch = collate(episodes)
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    reward = integrated_step_reward(batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid,
                                    lam=1.0)  # fmt: skip
    full = loss.row_advantages(batch, reward)  # one per requested vote, in vote_mask.nonzero() order
    in_band = TaskBandFilter(band=JUDGE_BAND)(batch)[batch.vote_mask.nonzero()[:, 0]]
    # the judge rows are the vote cells of tasks in band with a non-zero target, in that order, with the loss's own
    # advantage for their cell
    assert torch.allclose(data.judge.advantages, full[in_band & (full != 0)])
    # only task 0 (success 0.5) feeds the judge: task 1 (1.0) is outside the judge band
    assert set(data.judge.group.tolist()) == {0}
    assert bool((data.judge.advantages != 0).all())


def test_iteration_data_carries_only_what_the_update_reads() -> None:
    """The module reads the rows, the metrics and the index; the step grid, R and the records stay with the driver."""
    assert [f.name for f in fields(IterationData)] == ["iteration", "policy", "judge", "metrics"]
    episodes = _group(0, [True, False])
    data = build_iteration(episodes, iteration=2, integrator=OutcomeOnlyIntegrator(), pad_id=0)
    assert data.iteration == 2 and data.policy is not None and data.metrics["rollouts"] == 2.0
    empty = empty_iteration(5)
    assert empty.iteration == 5 and empty.policy is None and empty.judge is None and empty.metrics["rollouts"] == 0


def test_zero_target_judge_rows_are_dropped_unless_asked_to_keep_them() -> None:
    # task 0 (success 0.5, in the judge band): on step 1 every vote is +1, so its three targets are equal and
    # standardize to 0; on step 0 the votes disagree
    episodes = [
        Episode("t0", 0, "g", [_step([1, -1, 1]), _step([1, 1, 1])], won=True),
        Episode("t0", 0, "g", [_step([-1, 1, 1]), _step([1, 1, 1])], won=False),
    ]
    kwargs = dict(iteration=0, integrator=IntegratedIntegrator(), pad_id=0)
    dropped = build_iteration(episodes, judge_targets=ConsistencyTargets(), **kwargs)  # type: ignore[arg-type]
    kept = build_iteration(episodes, judge_targets=ConsistencyTargets(drop_zero_rows=False), **kwargs)  # type: ignore[arg-type]
    assert dropped.judge is not None and kept.judge is not None
    assert dropped.judge.num_rows == 6 and bool((dropped.judge.advantages != 0).all())  # step 0's votes only
    assert kept.judge.num_rows == 12 and int((kept.judge.advantages == 0).sum()) == 6  # every vote of the task
    assert kept.metrics["judge_rows"] == 12 and dropped.metrics["judge_rows"] == 6


class _Reversed:
    """A new integrator (not one the loop knows): the outcome-only advantages, sign flipped."""

    needs_votes: ClassVar[bool] = False

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        return -OutcomeOnlyIntegrator()(batch)


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_the_step_reward_is_shared_and_no_integrator_changes_the_judge_targets(lam: float) -> None:
    """One R = O + lam * mean(votes) for both models: whatever the integrator, the judge's rows are the same."""
    episodes = _group(0, [True, False, True, False]) + _group(1, [True, False, False, False])
    reward = StepReward(lam=lam)
    datas = [
        build_iteration(episodes, iteration=0, integrator=integrator, pad_id=0, step_reward=reward,
                        judge_targets=ConsistencyTargets(drop_zero_rows=False))
        for integrator in (IntegratedIntegrator(), OutcomeOnlyIntegrator(), StepOnlyIntegrator(), _Reversed())
    ]  # fmt: skip
    batch = collate(episodes)
    _, expected = ConsistencyTargets()(batch, reward(batch))
    assert batch.vote_mask is not None
    in_band = TaskBandFilter(band=JUDGE_BAND)(batch)[batch.vote_mask.nonzero()[:, 0]]
    for data in datas:
        assert data.judge is not None
        assert torch.equal(data.judge.advantages, expected[batch.vote_mask][in_band])
        assert torch.equal(data.judge.rows.input_ids, datas[0].judge.rows.input_ids)  # type: ignore[union-attr]
    # the integrated integrator standardizes that same R (not an R of its own)
    policy = datas[0].policy
    assert policy is not None
    advantages = IntegratedIntegrator()(batch, reward(batch))
    cells = policy.rows.index
    assert torch.equal(policy.advantages, advantages[cells[:, 0], cells[:, 1]])
    other, reversed_rows = _Reversed()(batch), datas[3].policy
    assert reversed_rows is not None
    cells = reversed_rows.rows.index
    assert torch.equal(reversed_rows.advantages, other[cells[:, 0], cells[:, 1]])


def test_lam_changes_both_models_together() -> None:
    # the vote means differ within each outcome, so R = O + lam * mean(votes) takes four values per step and lam changes
    # its standardization (with two values in equal numbers, any lam standardizes to +-1: nothing to tell apart)
    episodes = [
        Episode("t0", 0, "g", [_step([vote, vote, -vote]) for _ in range(2)], won=won)
        for won, vote in ((True, 1), (True, -1), (False, 1), (False, -1))
    ]
    one, half = (
        build_iteration(episodes, iteration=0, integrator=IntegratedIntegrator(), pad_id=0,
                        step_reward=StepReward(lam=lam), judge_targets=ConsistencyTargets())
        for lam in (1.0, 0.5)
    )  # fmt: skip
    assert one.judge is not None and half.judge is not None and one.policy is not None and half.policy is not None
    assert not torch.equal(one.judge.advantages, half.judge.advantages)
    assert not torch.equal(one.policy.advantages, half.policy.advantages)


def test_an_integrator_that_needs_votes_refuses_episodes_without_them() -> None:
    episodes = [Episode("t0", 0, "g", [_step([])], won=won) for won in (True, False)]
    with pytest.raises(ValueError, match="integrator: StepOnlyIntegrator needs judge votes"):
        build_iteration(episodes, iteration=0, integrator=StepOnlyIntegrator(), pad_id=0)
    assert build_iteration(episodes, iteration=0, integrator=OutcomeOnlyIntegrator(), pad_id=0).policy is not None
