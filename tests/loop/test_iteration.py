import torch

from rlanything_core.advantages.integrators import IntegratedIntegrator, OutcomeOnlyIntegrator
from rlanything_core.collect.batching import collate
from rlanything_core.loop.iteration import build_iteration
from rlanything_core.losses.consistency import ConsistencyRewardLoss
from rlanything_core.records import AgentStep, Episode, JudgeSample


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
    full = loss.row_advantages(batch, data.step_reward)
    # every judge row's advantage equals the loss's own advantage for that vote cell
    assert torch.allclose(data.judge.advantages, full[data.judge.vote_rows])
    # only task 0 (success 0.5) feeds the judge: task 1 (1.0) is outside the judge band
    assert set(data.judge.group.tolist()) == {0}
    assert bool((data.judge.advantages != 0).all())
