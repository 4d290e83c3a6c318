"""PassFractionIntegrator: coding's policy advantages behind the integrator interface (the per-task z-score)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.rewards.pass_fraction import PassFractionIntegrator
from rlanything_core.rewards.unit_tests import standardize_unit_test_rewards
from rlanything_core.types import StepBatch


def _batch(groups: list[int]) -> StepBatch:
    n = len(groups)
    return StepBatch(-torch.ones(n), torch.ones(n, 1, dtype=torch.bool), torch.tensor(groups, dtype=torch.int64))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1 / 3, 0.5, 2 / 3, 1.0, 0.25])), min_size=1,
                max_size=12))  # fmt: skip
def test_each_task_is_z_scored_on_its_own_rollouts(cells: list[tuple[int, float]]) -> None:
    """Groups in any order: each task's advantages are, bit for bit, the z-score of its own rewards alone."""
    groups = [g for g, _ in cells]
    reward = torch.tensor([[r] for _, r in cells], dtype=torch.float32)
    out = PassFractionIntegrator()(_batch(groups), reward)
    for g in set(groups):
        rows = torch.tensor([i for i, h in enumerate(groups) if h == g])
        assert torch.equal(out[rows, 0], standardize_unit_test_rewards(reward[rows, 0]))


def test_it_is_an_integrator_that_needs_no_votes() -> None:
    assert isinstance(PassFractionIntegrator(), Integrator) and PassFractionIntegrator.needs_votes is False


def test_a_lone_rollout_follows_the_singleton_rule() -> None:
    batch, reward = _batch([0, 1, 1]), torch.tensor([[0.5], [1.0], [0.0]])
    assert PassFractionIntegrator()(batch, reward)[0, 0] == 0.0
    raw = PassFractionIntegrator(singleton=SingletonRule.RAW)(batch, reward)
    assert raw[0, 0] == 0.5 and torch.equal(raw[1:, 0], torch.tensor([1.0, -1.0]))


def test_padding_stays_zero_and_steps_are_scored_per_index() -> None:
    mask = torch.tensor([[True, True], [True, False]])
    batch = StepBatch(torch.tensor([1.0, -1.0]), mask, torch.tensor([0, 0]))
    out = PassFractionIntegrator()(batch, torch.tensor([[1.0, 7.0], [0.0, float("nan")]]))
    assert torch.equal(out, torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))


def test_bad_input_is_refused_by_name() -> None:
    batch = _batch([0, 0])
    with pytest.raises(ValueError, match="step_reward: expected the scorer's"):
        PassFractionIntegrator()(batch, None)
    with pytest.raises(ValueError, match="step_reward"):
        PassFractionIntegrator()(batch, torch.zeros(3, 1))
    with pytest.raises(ValueError, match="batch: expected a StepBatch"):
        PassFractionIntegrator()("grid", torch.zeros(2, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        PassFractionIntegrator(eps=0.0)
    with pytest.raises(ValueError, match="singleton"):
        PassFractionIntegrator(singleton="zero")  # type: ignore[arg-type]
