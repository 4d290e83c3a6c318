"""Integrators (one signature: (StepBatch, step reward) -> (B, S) advantages) against the plain-Python reference."""

from __future__ import annotations

import doctest

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlanything_core.advantages.integrators as I
import rlanything_core.advantages.step_reward as R
from rlanything_core.advantages import (
    IntegratedIntegrator,
    Integrator,
    OutcomeOnlyIntegrator,
    SingletonRule,
    StepOnlyIntegrator,
    StepReward,
)
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

SETTINGS = settings(max_examples=60, deadline=None)


def test_doctests() -> None:
    assert doctest.testmod(I).failed == 0
    assert doctest.testmod(R).failed == 0


def test_protocol() -> None:
    for integrator in (OutcomeOnlyIntegrator(), IntegratedIntegrator(), StepOnlyIntegrator()):
        assert isinstance(integrator, Integrator)
        assert type(integrator).__name__ in repr(integrator)
    assert [c.needs_votes for c in (OutcomeOnlyIntegrator, IntegratedIntegrator, StepOnlyIntegrator)] == [
        False, True, True
    ]


@SETTINGS
@given(batch=step_batches(), lam=st.sampled_from([0.0, 0.5, 1.0]), rule=st.sampled_from(list(SingletonRule)))
def test_integrators_match_plain(batch: StepBatch, lam: float, rule: SingletonRule) -> None:
    pb = plain.from_step_batch(batch)
    cases = [
        (IntegratedIntegrator(singleton=rule), plain.integrated_step_reward(pb, lam=lam)),
        (OutcomeOnlyIntegrator(singleton=rule), plain.outcome_step_reward(pb)),
        (StepOnlyIntegrator(singleton=rule), plain.step_only_reward(pb)),
    ]
    for integrator, reward in cases:
        ref = plain.standardize_per_step(reward, pb.group, singleton=rule)
        got = integrator(batch, StepReward(lam=lam)(batch))
        assert got.shape == (batch.num_rollouts, batch.max_steps) and torch.isfinite(got).all()
        torch.testing.assert_close(got, plain.steps_to_grid(ref, batch.max_steps), atol=1e-5, rtol=0)


@SETTINGS
@given(batch=step_batches(), rule=st.sampled_from(list(SingletonRule)))
def test_lam_zero_is_grpo(batch: StepBatch, rule: SingletonRule) -> None:
    """M2: IntegratedIntegrator on StepReward(lam=0) == OutcomeOnlyIntegrator, exactly."""
    assert torch.equal(
        IntegratedIntegrator(singleton=rule)(batch, StepReward(lam=0.0)(batch)),
        OutcomeOnlyIntegrator(singleton=rule)(batch),
    )


@SETTINGS
@given(batch=step_batches(), extra_steps=st.integers(0, 3), extra_votes=st.integers(0, 2), seed=st.integers(0, 99))
def test_integrators_padding_invariance(batch: StepBatch, extra_steps: int, extra_votes: int, seed: int) -> None:
    padded = with_garbage_padding(batch, extra_steps=extra_steps, extra_votes=extra_votes, seed=seed)
    s = batch.max_steps
    for integrator in (OutcomeOnlyIntegrator(), IntegratedIntegrator(), StepOnlyIntegrator()):
        a0 = integrator(batch, StepReward()(batch))
        a1 = integrator(padded, StepReward()(padded))
        assert torch.equal(a1[:, :s], a0) and bool((a1[:, s:] == 0).all())
        assert bool((a0[~batch.step_mask] == 0).all())


def test_grpo_constant_across_steps_when_all_reach_them() -> None:
    """M2: with equal lengths, the outcome-only advantage is the same at every step of a trajectory."""
    batch = StepBatch(torch.tensor([1.0, -1.0, -1.0]), torch.ones(3, 4, dtype=torch.bool), torch.tensor([2, 2, 2]))
    adv = OutcomeOnlyIntegrator()(batch)
    assert bool((adv == adv[:, :1]).all())
    torch.testing.assert_close(adv[:, 0], torch.tensor([2**0.5, -(2**-0.5), -(2**-0.5)]))


def test_vote_integrators_need_votes() -> None:
    batch = StepBatch(torch.tensor([1.0, -1.0]), torch.ones(2, 2, dtype=torch.bool), torch.tensor([0, 0]))
    for integrator in (IntegratedIntegrator(), StepOnlyIntegrator()):
        with pytest.raises(ValueError, match="batch"):
            integrator(batch, torch.zeros(2, 2))
    with pytest.raises(ValueError, match="batch"):
        StepReward()(batch)
    assert OutcomeOnlyIntegrator()(batch).shape == (2, 2)


def test_integrated_needs_a_step_reward_of_the_grid() -> None:
    step_mask = torch.ones(2, 1, dtype=torch.bool)
    votes = torch.tensor([[[1.0]], [[-1.0]]])
    batch = StepBatch(torch.tensor([1.0, -1.0]), step_mask, torch.tensor([0, 0]), votes, step_mask[..., None],
                      step_mask[..., None])
    for bad, match in ((None, "step_reward.*None"), (torch.zeros(2, 2), "step_reward"),
                       (torch.zeros(2, 1, dtype=torch.int64), "step_reward")):
        with pytest.raises(ValueError, match=match):
            IntegratedIntegrator()(batch, bad)


@pytest.mark.parametrize("lam", [-0.1, float("nan"), float("inf"), True, "1"])
def test_bad_lam(lam: object) -> None:
    with pytest.raises(ValueError, match="lam"):
        StepReward(lam=lam)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [OutcomeOnlyIntegrator, IntegratedIntegrator, StepOnlyIntegrator])
def test_bad_hyperparameters(cls: type) -> None:
    with pytest.raises(ValueError, match="eps"):
        cls(eps=-1.0)
    with pytest.raises(ValueError, match="singleton"):
        cls(singleton="zero")
    with pytest.raises(ValueError, match="batch"):
        cls()((torch.ones(2), torch.ones(2, 1, dtype=torch.bool), torch.zeros(2, dtype=torch.int64)), None)
