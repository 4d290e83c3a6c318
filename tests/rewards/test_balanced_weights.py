"""Balanced consistency targets: a group's won and failed steps weigh the same, whatever the episodes' lengths."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.rewards.consistency import balanced_step_weights
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.types import StepBatch


@st.composite
def episodes(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(outcome, step_mask, group_index)``: up to 10 episodes of 1-12 steps in up to 4 groups."""
    n = draw(st.integers(1, 10))
    lengths = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    outcome = torch.tensor(draw(st.lists(st.sampled_from([1.0, -1.0, 0.0, 0.5]), min_size=n, max_size=n)))
    groups = torch.tensor(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=torch.int64)
    mask = torch.arange(12)[None, :] < torch.tensor(lengths)[:, None]
    return outcome, mask, groups


@settings(max_examples=200, deadline=None)
@given(episodes())
def test_each_group_s_won_and_failed_steps_carry_half_of_its_weight(data: tuple[torch.Tensor, ...]) -> None:
    outcome, mask, groups = data
    w = balanced_step_weights(outcome, mask, groups).double()
    assert bool((w[~mask] == 0).all()) and bool((w[mask] > 0).all())
    won = (outcome > 0)[:, None] & mask
    for g in groups.unique().tolist():
        rows = (groups == g)[:, None]
        n = float((mask & rows).sum())
        won_w, failed_w = float(w[won & rows].sum()), float(w[~won & mask & rows].sum())
        assert won_w + failed_w == pytest.approx(n)  # the group's scale is unchanged
        if bool((won & rows).any()) and bool((~won & mask & rows).any()):
            assert won_w == pytest.approx(failed_w)
        else:  # one class only: nothing to balance
            assert bool((w[mask & rows] == 1).all())


@settings(max_examples=100, deadline=None)
@given(episodes(), st.randoms(use_true_random=False))
def test_weights_follow_the_episodes_when_they_are_reordered(data: tuple[torch.Tensor, ...], rnd) -> None:  # type: ignore[no-untyped-def]
    outcome, mask, groups = data
    order = list(range(len(outcome)))
    rnd.shuffle(order)
    perm = torch.tensor(order)
    w = balanced_step_weights(outcome, mask, groups)
    assert torch.allclose(balanced_step_weights(outcome[perm], mask[perm], groups[perm]), w[perm])


def _batch(outcome: list[float], lengths: list[int], votes: list[float]) -> StepBatch:
    """One group; every step gets the same ``m`` votes (a judge whose votes say nothing about the step)."""
    s, m = max(lengths), len(votes)
    mask = torch.arange(s)[None, :] < torch.tensor(lengths)[:, None]
    vote_mask = mask[:, :, None].expand(-1, -1, m).clone()
    grid = torch.tensor(votes).expand(len(outcome), s, m) * vote_mask
    return StepBatch(torch.tensor(outcome), mask, torch.zeros(len(outcome), dtype=torch.int64), grid, vote_mask,
                     vote_mask.clone())  # fmt: skip


@pytest.mark.parametrize("failed_length", [2, 5, 20])
def test_the_push_toward_plus_one_is_zero_on_average_only_when_balanced(failed_length: int) -> None:
    """Votes ``[+1, -1]`` on every step, ``R = O``: the ``+1`` vote's target is ``+1`` on won steps, ``-1`` on failed.

    Unbalanced, its sum over the steps is ``n_won - n_failed``: the longer the failed episodes, the harder the judge
    is pushed to ``-1`` (the collapse the CPU default showed). Balanced, it is 0 whatever the lengths.
    """
    batch = _batch([1.0, -1.0, -1.0], [3, failed_length, failed_length], [1.0, -1.0])
    reward = batch.outcome[:, None].expand_as(batch.step_mask).clone()
    plain = ConsistencyTargets()(batch, reward)[1][..., 0]
    balanced_raw, balanced = ConsistencyTargets(balance_outcomes=True)(batch, reward)
    assert float(plain.sum()) == pytest.approx(3 - 2 * failed_length)
    assert float(balanced[..., 0].sum()) == pytest.approx(0.0, abs=1e-5)
    weights = balanced_step_weights(batch.outcome, batch.step_mask, batch.group_index)
    assert torch.allclose(balanced, ConsistencyTargets()(batch, reward)[1] * weights[..., None])
    assert torch.equal(balanced_raw, ConsistencyTargets()(batch, reward)[0])  # only the standardized part is weighted


def test_bad_input_is_refused_by_name() -> None:
    mask = torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="outcome"):
        balanced_step_weights(torch.tensor([1.0, float("nan")]), mask, torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="step_mask"):
        balanced_step_weights(torch.tensor([1.0, -1.0]), mask.float(), torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="group_index"):
        balanced_step_weights(torch.tensor([1.0, -1.0]), mask, torch.tensor([0, -1]))
    with pytest.raises(ValueError, match="balance_outcomes"):
        ConsistencyTargets(balance_outcomes="yes")  # type: ignore[arg-type]
