"""The hypothesis strategies draw what the property tests rely on (ragged groups, failures, garbage padding)."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, find, given, settings

from rlanything_core.testing.strategies import GARBAGE, step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

FIND = settings(max_examples=500, database=None, suppress_health_check=list(HealthCheck))


def group_sizes(batch: StepBatch) -> list[int]:
    return torch.unique(batch.group_index, return_counts=True)[1].tolist()


@settings(max_examples=50, deadline=None)
@given(batch=step_batches())
def test_drawn_batches_are_valid_and_padded_with_garbage(batch: StepBatch) -> None:
    assert batch.has_votes and batch.num_rollouts >= 1 and min(group_sizes(batch)) >= 1
    assert bool((batch.num_steps >= 1).all())
    assert batch.votes is not None and batch.vote_mask is not None
    assert batch.vote_valid is not None
    off = batch.votes[~batch.vote_valid]  # every cell outside vote_valid holds garbage (NaN, inf, 1e30, -7, 3)
    pool = torch.tensor([g for g in GARBAGE if g == g], dtype=off.dtype)
    assert bool((off.isnan() | torch.isin(off, pool)).all())


FEATURES = {
    "uneven groups": lambda b: len(set(group_sizes(b))) > 1,
    "singleton group": lambda b: 1 in group_sizes(b) and len(group_sizes(b)) > 1,
    "ragged lengths": lambda b: len(set(b.num_steps.tolist())) > 2,
    "unparseable votes": lambda b: bool((b.vote_mask & ~b.vote_valid).any()),
    "unrequested votes": lambda b: bool((b.step_mask.unsqueeze(-1) & ~b.vote_mask).any()),
    "nan and inf padding": lambda b: bool(b.votes.isnan().any() and b.votes.isinf().any()),
    "sparse group ids": lambda b: int(b.group_index.max()) > b.num_rollouts,
    "all votes valid and agreeing": lambda b: bool(
        (b.vote_mask == b.vote_valid).all() and (b.votes[b.vote_valid] == 1).all()
    ),
}


def test_strategies_reach_the_interesting_cases() -> None:
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(batch=step_batches())
    def draw(batch: StepBatch) -> None:
        seen.update(name for name, has in FEATURES.items() if has(batch))

    draw()
    assert seen == set(FEATURES)
    find(step_batches(min_steps=0), lambda b: bool((b.num_steps == 0).any()), settings=FIND)  # empty rollouts


@settings(max_examples=30, deadline=None)
@given(batch=step_batches())
def test_with_garbage_padding_keeps_the_data(batch: StepBatch) -> None:
    padded = with_garbage_padding(batch, extra_steps=2, extra_votes=1, seed=3)
    assert batch.votes is not None and padded.votes is not None and padded.vote_valid is not None
    assert padded.votes.shape == (batch.num_rollouts, batch.max_steps + 2, batch.votes.shape[2] + 1)
    assert torch.equal(padded.step_mask[:, : batch.max_steps], batch.step_mask)
    assert torch.equal(padded.votes[padded.vote_valid], batch.votes[batch.vote_valid])
    assert not bool(padded.step_mask[:, batch.max_steps :].any())
