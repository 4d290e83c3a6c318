"""Consistency feedback for the judge: targets R * vote, format penalty, per-step vote standardization."""

from __future__ import annotations

import doctest

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlanything_core.rewards.consistency as C
from rlanything_core.advantages import integrated_step_reward, mean_votes
from rlanything_core.constants import FORMAT_PENALTY
from rlanything_core.rewards import consistency_targets, standardize_votes, vote_agreement
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

SETTINGS = settings(max_examples=80, deadline=None)


def parts(batch: StepBatch, lam: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    reward = integrated_step_reward(
        batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid, lam=lam
    )
    return reward, batch.votes, batch.vote_mask, batch.vote_valid


def test_doctests() -> None:
    assert doctest.testmod(C).failed == 0


@SETTINGS
@given(batch=step_batches(), lam=st.sampled_from([0.0, 0.5, 1.0, 2.0]), penalty=st.sampled_from([FORMAT_PENALTY, -5.0]))
def test_matches_plain(batch: StepBatch, lam: float, penalty: float) -> None:
    reward, votes, vote_mask, vote_valid = parts(batch, lam)
    pb = plain.from_step_batch(batch)
    ref_targets = plain.consistency_targets(plain.integrated_step_reward(pb, lam=lam), pb.votes, format_penalty=penalty)
    targets = consistency_targets(reward, votes, vote_mask, vote_valid, format_penalty=penalty)
    torch.testing.assert_close(targets, plain.votes_to_grid(ref_targets, vote_mask), atol=1e-5, rtol=0)
    z = standardize_votes(targets, vote_mask)
    ref_z = plain.standardize_votes(ref_targets)
    torch.testing.assert_close(z, plain.votes_to_grid(ref_z, vote_mask), atol=1e-5, rtol=0)
    assert (
        abs(float(vote_agreement(votes, vote_valid, batch.outcome)) - plain.vote_agreement(pb.votes, pb.outcome)) < 1e-6
    )


@SETTINGS
@given(batch=step_batches(), lam=st.floats(0.0, 1.0))
def test_agreeing_vote_beats_disagreeing_vote(batch: StepBatch, lam: float) -> None:
    """In one step with R != 0: a valid vote with sign(vote) == sign(R) gets a strictly higher standardized target
    than a valid vote with the opposite sign."""
    reward, votes, vote_mask, vote_valid = parts(batch, lam)
    z = standardize_votes(consistency_targets(reward, votes, vote_mask, vote_valid), vote_mask)
    agree = vote_valid & (torch.sign(votes) == torch.sign(reward).unsqueeze(-1)) & (reward != 0).unsqueeze(-1)
    disagree = vote_valid & (torch.sign(votes) == -torch.sign(reward).unsqueeze(-1)) & (reward != 0).unsqueeze(-1)
    inf = torch.tensor(float("inf"), dtype=z.dtype)
    lowest_agree = torch.where(agree, z, inf).amin(dim=-1)
    highest_disagree = torch.where(disagree, z, -inf).amax(dim=-1)
    both = agree.any(-1) & disagree.any(-1)
    assert bool((lowest_agree[both] > highest_disagree[both]).all())


@SETTINGS
@given(batch=step_batches(), lam=st.floats(0.0, 1.0))
def test_format_failure_is_lowest(batch: StepBatch, lam: float) -> None:
    """With |O| = 1 and lam <= 1, |R| <= 2 so every parseable raw target R * vote >= -2 = FORMAT_PENALTY.

    Tested precisely: in every step, a format failure's standardized target is <= that of every other requested vote
    of the step; it is strictly lower than every valid vote whose raw target is > -2 (then the step's targets are not
    all equal, so its std is > 0 and the z-score preserves the strict order); steps whose targets are all equal are 0.
    """
    reward, votes, vote_mask, vote_valid = parts(batch, lam)
    raw = consistency_targets(reward, votes, vote_mask, vote_valid)
    z = standardize_votes(raw, vote_mask)
    fail = vote_mask & ~vote_valid
    inf = torch.tensor(float("inf"), dtype=z.dtype)
    highest_fail = torch.where(fail, z, -inf).amax(dim=-1, keepdim=True)
    assert bool((z >= highest_fail)[vote_mask].all())
    above = vote_valid & (raw > FORMAT_PENALTY)
    assert bool((z > highest_fail)[above].all())
    assert bool((raw[vote_valid] >= FORMAT_PENALTY - 1e-12).all())


@SETTINGS
@given(batch=step_batches())
def test_m4_sum_of_targets(batch: StepBatch) -> None:
    """M4: for steps whose requested votes are all valid, sum_j R * S_j = m * R * s_bar = m (O s_bar + lam s_bar^2)."""
    reward, votes, vote_mask, vote_valid = parts(batch)
    targets = consistency_targets(reward, votes, vote_mask, vote_valid)
    m = vote_mask.sum(-1).double()
    s_bar = mean_votes(votes, vote_mask, vote_valid)
    all_valid = (vote_mask == vote_valid).all(-1) & vote_mask.any(-1)
    lhs = targets.sum(-1)[all_valid]
    torch.testing.assert_close(lhs, (m * reward * s_bar)[all_valid])
    o = batch.outcome.unsqueeze(1).expand_as(s_bar)
    torch.testing.assert_close(lhs, (m * (o * s_bar + s_bar * s_bar))[all_valid])
    zero_r = vote_valid & (reward == 0).unsqueeze(-1)  # R = 0: every judgment gets 0
    assert bool((targets[zero_r] == 0).all())
    agreeing = vote_valid & (torch.sign(votes) == torch.sign(reward).unsqueeze(-1)) & (reward != 0).unsqueeze(-1)
    assert bool((targets[agreeing] > 0).all())


@SETTINGS
@given(batch=step_batches(), extra_steps=st.integers(0, 2), extra_votes=st.integers(0, 2), seed=st.integers(0, 99))
def test_padding_invariance(batch: StepBatch, extra_steps: int, extra_votes: int, seed: int) -> None:
    padded = with_garbage_padding(batch, extra_steps=extra_steps, extra_votes=extra_votes, seed=seed)
    s, m = batch.max_steps, batch.votes.shape[2] if batch.votes is not None else 0

    def run(b: StepBatch) -> tuple[torch.Tensor, torch.Tensor]:
        reward, votes, vote_mask, vote_valid = parts(b)
        reward = torch.where(b.step_mask, reward, torch.tensor(float("nan"), dtype=reward.dtype))
        t = consistency_targets(reward, votes, vote_mask, vote_valid)
        garbage_t = torch.where(vote_mask, t, torch.tensor(float("inf"), dtype=t.dtype))
        return t, standardize_votes(garbage_t, vote_mask)

    t0, z0 = run(batch)
    t1, z1 = run(padded)
    assert torch.equal(t1[:, :s, :m], t0) and torch.equal(z1[:, :s, :m], z0)
    rest = torch.ones_like(t1, dtype=torch.bool)
    rest[:, :s, :m] = False
    assert bool((t1[rest] == 0).all()) and bool((z1[rest] == 0).all()) and torch.isfinite(z1).all()


def test_zero_variance_and_single_vote_steps_are_zero() -> None:
    targets = torch.tensor([[[1.0, 1.0, 1.0], [2.0, float("nan"), float("nan")], [0.0, 0.0, 0.0]]])
    mask = torch.tensor([[[True, True, True], [True, False, False], [False, False, False]]])
    assert bool((standardize_votes(targets, mask) == 0).all())
    assert bool((standardize_votes(targets.float(), mask) == 0).all())
    for m in range(2, 9):  # equal float32 targets whose float32 mean is an ulp off: still degenerate, all 0
        for value in (4 / 3, -4 / 3, 1 / 3, 5 / 3, 2 * 4 / 3):
            equal = torch.full((1, 1, m), value, dtype=torch.float32)
            assert bool((standardize_votes(equal, torch.ones(1, 1, m, dtype=torch.bool)) == 0).all())


def test_vote_agreement_empty_is_zero() -> None:
    votes = torch.full((2, 3, 2), float("nan"))
    assert float(vote_agreement(votes, torch.zeros(2, 3, 2, dtype=torch.bool), torch.tensor([1.0, -1.0]))) == 0.0
    assert float(vote_agreement(torch.zeros(0, 0, 3), torch.zeros(0, 0, 3, dtype=torch.bool), torch.zeros(0))) == 0.0
