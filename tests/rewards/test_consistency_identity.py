"""With lam <= 1 and no format failures, the z-scored consistency target equals sign(O) * z(votes): the judge is
trained to predict each step's episode outcome (docs/method.md, section 2)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.rewards.consistency import standardize_votes
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.types import StepBatch


@st.composite
def batches(draw: st.DrawFn) -> tuple[StepBatch, float]:
    b, s, m = draw(st.integers(1, 6)), draw(st.integers(1, 5)), draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    outcome = torch.where(torch.rand(b, generator=gen) < 0.5, 1.0, -1.0)
    lengths = torch.randint(1, s + 1, (b,), generator=gen)
    step_mask = torch.arange(s).unsqueeze(0) < lengths.unsqueeze(1)
    votes = torch.where(torch.rand(b, s, m, generator=gen) < draw(st.floats(0.0, 1.0)), 1.0, -1.0)
    vote_mask = step_mask.unsqueeze(-1).expand(b, s, m).clone()
    votes = votes * vote_mask  # 0 off the mask, as collate leaves it
    lam = draw(st.one_of(st.just(1.0), st.just(0.0), st.floats(0.0, 1.0)))
    return StepBatch(outcome, step_mask, torch.zeros(b, dtype=torch.long), votes, vote_mask, vote_mask), lam


@settings(max_examples=300, deadline=None)
@given(batches())
def test_the_standardized_consistency_target_is_the_outcome_sign_times_the_z_scored_votes(
    case: tuple[StepBatch, float],
) -> None:
    batch, lam = case
    assert batch.votes is not None and batch.vote_mask is not None
    _, standardized = ConsistencyTargets()(batch, StepReward(lam=lam)(batch))
    identity = batch.outcome.view(-1, 1, 1) * standardize_votes(batch.votes, batch.vote_mask)
    assert torch.allclose(standardized, identity, atol=1e-5), float((standardized - identity).abs().max())


def test_the_identity_breaks_for_lam_above_one() -> None:
    # lam = 3, O = -1, three of four votes +1: R = -1 + 3 * 0.5 > 0, so the target follows the votes, not sign(O)
    votes = torch.tensor([[[1.0, 1.0, 1.0, -1.0]]])
    mask = torch.ones(1, 1, 4, dtype=torch.bool)
    batch = StepBatch(torch.tensor([-1.0]), torch.ones(1, 1, dtype=torch.bool), torch.tensor([0]), votes, mask, mask)
    _, standardized = ConsistencyTargets()(batch, StepReward(lam=3.0)(batch))
    assert not torch.allclose(standardized, -standardize_votes(votes, mask), atol=1e-5)
