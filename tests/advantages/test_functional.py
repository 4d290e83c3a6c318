"""Property and equivalence tests of rlanything_core.advantages.functional."""

from __future__ import annotations

import doctest

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlanything_core.advantages.functional as F
from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

SETTINGS = settings(max_examples=80, deadline=None)
TOL = 1e-5


def votes_of(batch: StepBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    return batch.votes, batch.vote_mask, batch.vote_valid


def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape
    assert torch.isfinite(actual).all()
    torch.testing.assert_close(actual.double(), expected.double(), atol=TOL, rtol=0)


def test_doctests() -> None:
    assert doctest.testmod(F).failed == 0


# ---- equality with the plain-Python reference --------------------------------------------------------------------


@SETTINGS
@given(batch=step_batches(), lam=st.sampled_from([0.0, 0.5, 1.0, 2.0]))
def test_integrated_step_reward_matches_plain(batch: StepBatch, lam: float) -> None:
    ref = plain.integrated_step_reward(plain.from_step_batch(batch), lam=lam)
    got = F.integrated_step_reward(batch.outcome, batch.step_mask, *votes_of(batch), lam=lam)
    assert_close(got, plain.steps_to_grid(ref, batch.max_steps))


@SETTINGS
@given(batch=step_batches())
def test_mean_outcome_step_only_match_plain(batch: StepBatch) -> None:
    pb = plain.from_step_batch(batch)
    s = batch.max_steps
    assert_close(
        F.outcome_step_reward(batch.outcome, batch.step_mask), plain.steps_to_grid(plain.outcome_step_reward(pb), s)
    )
    assert_close(
        F.step_only_reward(batch.step_mask, *votes_of(batch)), plain.steps_to_grid(plain.step_only_reward(pb), s)
    )
    means = [[plain.mean_votes(v) for v in steps] for steps in pb.votes]
    assert_close(F.mean_votes(*votes_of(batch)), plain.steps_to_grid(means, s))


@SETTINGS
@given(batch=step_batches(), lam=st.sampled_from([0.0, 1.0]), rule=st.sampled_from(list(SingletonRule)))
def test_standardize_per_step_matches_plain(batch: StepBatch, lam: float, rule: SingletonRule) -> None:
    pb = plain.from_step_batch(batch)
    ref = plain.integrated_advantages(pb, lam=lam, singleton=rule)
    reward = F.integrated_step_reward(batch.outcome, batch.step_mask, *votes_of(batch), lam=lam)
    got = F.standardize_per_step(reward, batch.step_mask, batch.group_index, singleton=rule)
    assert_close(got, plain.steps_to_grid(ref, batch.max_steps))


@SETTINGS
@given(batch=step_batches(with_votes=False), seed=st.integers(0, 2**31 - 1))
def test_standardize_arbitrary_rewards_matches_plain(batch: StepBatch, seed: int) -> None:
    """Real-valued rewards (not just vote grids), float32 input, garbage at padding."""
    gen = torch.Generator().manual_seed(seed)
    reward = torch.randint(-12, 13, batch.step_mask.shape, generator=gen).double() / 4
    reward = torch.where(batch.step_mask, reward, torch.tensor(float("nan"), dtype=torch.float64))
    rows = [reward[b, :n].tolist() for b, n in enumerate(batch.num_steps.tolist())]
    for rule in SingletonRule:
        ref = plain.standardize_per_step(rows, batch.group_index.tolist(), singleton=rule)
        got = F.standardize_per_step(reward.float(), batch.step_mask, batch.group_index, singleton=rule)
        assert got.dtype == torch.float32
        assert_close(got, plain.steps_to_grid(ref, batch.max_steps))


@SETTINGS
@given(batch=step_batches(with_votes=False))
def test_group_success_rate_matches_plain(batch: StepBatch) -> None:
    ref = plain.group_success_rate(batch.outcome.tolist(), batch.group_index.tolist())
    assert_close(F.group_success_rate(batch.outcome, batch.group_index), torch.tensor(ref))


# ---- invariants --------------------------------------------------------------------------------------------------


@SETTINGS
@given(batch=step_batches(), lam=st.floats(0.0, 1.0))
def test_reward_never_contradicts_outcome(batch: StepBatch, lam: float) -> None:
    """M1: for lam <= 1, O = +1 -> R >= 0 and O = -1 -> R <= 0 at every real step."""
    reward = F.integrated_step_reward(batch.outcome, batch.step_mask, *votes_of(batch), lam=lam)
    signed = reward * batch.outcome.unsqueeze(1)
    assert bool((signed[batch.step_mask] >= 0).all())
    assert bool((reward[~batch.step_mask] == 0).all())


@SETTINGS
@given(batch=step_batches())
def test_standardized_segments_have_mean_0_std_1_or_are_zero(batch: StepBatch) -> None:
    """M3: over each (group, step index) segment with >= 2 members: mean 0 and population std 1, or all 0."""
    reward = F.integrated_step_reward(batch.outcome, batch.step_mask, *votes_of(batch))
    adv = F.standardize_per_step(reward, batch.step_mask, batch.group_index)
    for g in batch.group_index.unique().tolist():
        rows = batch.group_index == g
        for s in range(batch.max_steps):
            cell = batch.step_mask[:, s] & rows
            values = adv[cell, s]
            if values.numel() < 2 or bool((values == 0).all()):
                if values.numel() < 2:
                    assert bool((values == 0).all())
                continue
            assert abs(float(values.mean())) < 1e-9
            assert abs(float(values.std(unbiased=False)) - 1.0) < 1e-9


@SETTINGS
@given(batch=step_batches(), data=st.data())
def test_permutation_equivariance(batch: StepBatch, data: st.DataObject) -> None:
    """Permuting rollouts (inside and across groups) permutes the advantages the same way."""
    perm = torch.tensor(data.draw(st.permutations(range(batch.num_rollouts))), dtype=torch.int64)
    votes, vote_mask, vote_valid = votes_of(batch)
    permuted = StepBatch(
        batch.outcome[perm],
        batch.step_mask[perm],
        batch.group_index[perm],
        votes[perm],
        vote_mask[perm],
        vote_valid[perm],
    )

    def advantages(b: StepBatch) -> torch.Tensor:
        reward = F.integrated_step_reward(b.outcome, b.step_mask, *votes_of(b))
        return F.standardize_per_step(reward, b.step_mask, b.group_index)

    torch.testing.assert_close(advantages(permuted), advantages(batch)[perm], atol=1e-12, rtol=0)


@SETTINGS
@given(
    batch=step_batches(),
    extra_steps=st.integers(0, 3),
    extra_votes=st.integers(0, 2),
    seed=st.integers(0, 1000),
    rule=st.sampled_from(list(SingletonRule)),
)
def test_padding_invariance(
    batch: StepBatch, extra_steps: int, extra_votes: int, seed: int, rule: SingletonRule
) -> None:
    """Garbage (NaN/inf/1e30) in padding and extra padded steps/votes change no real cell; padded cells are 0."""
    padded = with_garbage_padding(batch, extra_steps=extra_steps, extra_votes=extra_votes, seed=seed)
    s = batch.max_steps

    def advantages(b: StepBatch) -> tuple[torch.Tensor, torch.Tensor]:
        reward = F.integrated_step_reward(b.outcome, b.step_mask, *votes_of(b))
        garbage_reward = torch.where(b.step_mask, reward, torch.tensor(float("nan"), dtype=reward.dtype))
        return reward, F.standardize_per_step(garbage_reward, b.step_mask, b.group_index, singleton=rule)

    r0, a0 = advantages(batch)
    r1, a1 = advantages(padded)
    assert torch.equal(r1[:, :s], r0) and torch.equal(a1[:, :s], a0)
    assert bool((r1[:, s:] == 0).all()) and bool((a1[:, s:] == 0).all())
    assert bool((a0[~batch.step_mask] == 0).all()) and torch.isfinite(a1).all()
    assert torch.equal(F.mean_votes(*votes_of(padded))[:, :s], F.mean_votes(*votes_of(batch)))


def test_singleton_rule() -> None:
    """A step index reached by one rollout: ZERO -> 0, RAW -> the raw reward (authors' behaviour)."""
    reward = torch.tensor([[1.5, -0.5, 2.0], [0.5, float("nan"), float("nan")], [-1.0, 0.0, float("nan")]])
    mask = torch.tensor([[True, True, True], [True, False, False], [True, True, False]])
    group = torch.tensor([4, 4, 9])  # rollout 2 is alone in its group: every step of it is a singleton
    zero = F.standardize_per_step(reward, mask, group)
    raw = F.standardize_per_step(reward, mask, group, singleton=SingletonRule.RAW)
    assert zero[0, 1:].tolist() == [0.0, 0.0] and zero[2].tolist() == [0.0, 0.0, 0.0]
    assert raw[0, 1:].tolist() == [-0.5, 2.0] and raw[2].tolist() == [-1.0, 0.0, 0.0]
    assert zero[:2, 0].tolist() == [1.0, -1.0] == raw[:2, 0].tolist()
    assert raw[1, 1:].tolist() == [0.0, 0.0]  # padding stays 0 under RAW too


def test_float32_degenerate_group_is_zero() -> None:
    """8 equal float32 rewards 4/3: the float32 mean is an ulp off; computed in float64 the group is degenerate."""
    for n in range(2, 17):
        for value in (4 / 3, -4 / 3, 1 / 3, 5 / 3, 1e6 / 3):
            reward = torch.full((n, 1), value, dtype=torch.float32)
            out = F.standardize_per_step(reward, torch.ones(n, 1, dtype=torch.bool), torch.zeros(n, dtype=torch.int64))
            assert out.dtype == torch.float32 and bool((out == 0).all()), (n, value, out)


@pytest.mark.parametrize("rule", list(SingletonRule))
def test_empty_and_all_padding_give_zero(rule: SingletonRule) -> None:
    for b, s in [(0, 0), (0, 3), (3, 0), (3, 4)]:
        reward = torch.full((b, s), float("nan"))
        mask = torch.zeros(b, s, dtype=torch.bool)
        out = F.standardize_per_step(reward, mask, torch.zeros(b, dtype=torch.int64), singleton=rule)
        assert out.shape == (b, s) and bool((out == 0).all())
        votes = torch.full((b, s, 2), float("nan"))
        vmask = torch.zeros(b, s, 2, dtype=torch.bool)
        r = F.integrated_step_reward(torch.ones(b), mask, votes, vmask, vmask)
        assert r.shape == (b, s) and bool((r == 0).all())
    assert F.group_success_rate(torch.zeros(0), torch.zeros(0, dtype=torch.int64)).shape == (0,)


def test_lam_zero_reward_is_outcome() -> None:
    votes = torch.tensor([[[1.0, -1.0], [1.0, 1.0]]])
    mask = torch.ones(1, 2, 2, dtype=torch.bool)
    step_mask = torch.ones(1, 2, dtype=torch.bool)
    out = F.integrated_step_reward(torch.tensor([-1.0]), step_mask, votes, mask, mask, lam=0.0)
    assert torch.equal(out, F.outcome_step_reward(torch.tensor([-1.0]), step_mask))


def test_unparseable_vote_counts_zero_in_the_mean() -> None:
    votes = torch.tensor([[[1.0, 1.0, float("nan")]]])
    mask = torch.ones(1, 1, 3, dtype=torch.bool)
    valid = torch.tensor([[[True, True, False]]])
    assert F.mean_votes(votes, mask, valid).item() == pytest.approx(2 / 3)
    partial = torch.tensor([[[True, True, False]]])  # only two votes requested
    assert F.mean_votes(votes, partial, partial).item() == pytest.approx(1.0)
