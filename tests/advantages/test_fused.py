"""The fused entry point equals the composition of the public functions and the plain-Python reference."""

from __future__ import annotations

import doctest
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlanything_core.advantages.fused as fused_module
from rlanything_core.advantages.functional import SingletonRule, integrated_step_reward, standardize_per_step
from rlanything_core.advantages.fused import (
    FeedbackTargets,
    batch_advantages_and_consistency,
    integrated_advantages_and_consistency,
)
from rlanything_core.rewards import consistency_targets, standardize_votes
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

SETTINGS = settings(max_examples=80, deadline=None)
TOL = 1e-5
NAN = float("nan")


def composed(
    batch: StepBatch,
    *,
    lam: float = 1.0,
    singleton: SingletonRule = SingletonRule.ZERO,
    format_penalty: float = -2.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same maths through the public functions, one by one."""
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    votes = (batch.votes, batch.vote_mask, batch.vote_valid)
    reward = integrated_step_reward(batch.outcome, batch.step_mask, *votes, lam=lam)
    advantages = standardize_per_step(reward, batch.step_mask, batch.group_index, singleton=singleton)
    targets = consistency_targets(reward, *votes, format_penalty=format_penalty)
    return advantages, standardize_votes(targets, batch.vote_mask)


def referenced(
    batch: StepBatch, *, lam: float = 1.0, singleton: SingletonRule = SingletonRule.ZERO, format_penalty: float = -2.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain-Python reference, back on the padded grids."""
    assert batch.vote_mask is not None
    pb = plain.from_step_batch(batch)
    reward = plain.integrated_step_reward(pb, lam=lam)
    advantages = plain.standardize_per_step(reward, pb.group, singleton=singleton)
    targets = plain.standardize_votes(plain.consistency_targets(reward, pb.votes, format_penalty=format_penalty))
    return plain.steps_to_grid(advantages, batch.max_steps), plain.votes_to_grid(targets, batch.vote_mask)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, tol: float = TOL) -> None:
    assert actual.shape == expected.shape
    assert actual.is_contiguous()
    assert bool(torch.isfinite(actual).all())
    assert not bool(torch.signbit(actual[actual == 0]).any()), "a -0 in the output"
    torch.testing.assert_close(actual.double(), expected.double(), atol=tol, rtol=0)


def as_float32(batch: StepBatch) -> StepBatch:
    assert batch.votes is not None
    return StepBatch(
        batch.outcome.float(),
        batch.step_mask,
        batch.group_index,
        batch.votes.float(),
        batch.vote_mask,
        batch.vote_valid,
    )


def test_doctests() -> None:
    assert doctest.testmod(fused_module).failed == 0


@SETTINGS
@given(
    batch=step_batches(),
    lam=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    rule=st.sampled_from(list(SingletonRule)),
    penalty=st.sampled_from([-2.0, -1.0, 0.0, 0.5]),
    single=st.booleans(),
)
def test_matches_composition_and_plain(
    batch: StepBatch, lam: float, rule: SingletonRule, penalty: float, single: bool
) -> None:
    if single:
        batch = as_float32(batch)
    got = batch_advantages_and_consistency(batch, lam=lam, singleton=rule, format_penalty=penalty)
    assert isinstance(got, FeedbackTargets)
    assert got.advantages.dtype == got.targets.dtype == batch.outcome.dtype
    for want in (
        composed(batch, lam=lam, singleton=rule, format_penalty=penalty),
        referenced(batch, lam=lam, singleton=rule, format_penalty=penalty),
    ):
        assert_close(got.advantages, want[0])
        assert_close(got.targets, want[1])


@SETTINGS
@given(batch=step_batches(max_groups=3, max_group_size=4, max_steps=4), lam=st.sampled_from([0.5, 1.0]))
def test_float64_matches_composition_tightly(batch: StepBatch, lam: float) -> None:
    """In float64 the only differences are summation order: far below the 1e-5 used against float32."""
    got = batch_advantages_and_consistency(batch, lam=lam)
    want = composed(batch, lam=lam)
    assert_close(got.advantages, want[0], tol=1e-12)
    assert_close(got.targets, want[1], tol=1e-12)


@SETTINGS
@given(batch=step_batches(), extra_steps=st.integers(0, 3), extra_votes=st.integers(0, 2), seed=st.integers(0, 99))
def test_padding_invariance(batch: StepBatch, extra_steps: int, extra_votes: int, seed: int) -> None:
    padded = with_garbage_padding(batch, extra_steps=extra_steps, extra_votes=extra_votes, seed=seed)
    small, big = batch_advantages_and_consistency(batch), batch_advantages_and_consistency(padded)
    b, s, m = small.targets.shape
    assert torch.equal(big.advantages[:, :s], small.advantages)
    assert torch.equal(big.targets[:, :s, :m], small.targets)
    assert not big.advantages[:, s:].any() and not big.targets[:, s:].any() and not big.targets[..., m:].any()


@SETTINGS
@given(batch=step_batches(max_groups=3, max_group_size=5), cells=st.integers(1, 40))
def test_row_chunks_do_not_change_the_result(batch: StepBatch, cells: int) -> None:
    """Small chunks (down to one rollout each, with a ragged last chunk) give bit-identical outputs."""
    whole = batch_advantages_and_consistency(batch)
    saved = fused_module._CHUNK_CELLS
    fused_module._CHUNK_CELLS = cells
    try:
        chunked = batch_advantages_and_consistency(batch)
    finally:
        fused_module._CHUNK_CELLS = saved
    assert torch.equal(chunked.advantages, whole.advantages) and torch.equal(chunked.targets, whole.targets)


def test_sparse_group_ids_take_the_unique_path() -> None:
    """Ids far larger than the batch are compacted with torch.unique (not a bincount over 10**12 slots)."""
    gen = torch.Generator().manual_seed(3)
    b, s, m = 12, 5, 3
    step_mask = torch.arange(s) < torch.randint(1, s + 1, (b, 1), generator=gen)
    vote_mask = step_mask.unsqueeze(-1).expand(b, s, m).clone()
    vote_valid = vote_mask & (torch.rand(b, s, m, generator=gen) < 0.8)
    votes = torch.where(torch.rand(b, s, m, generator=gen) < 0.5, 1.0, -1.0).double()
    outcome = torch.where(torch.rand(b, generator=gen) < 0.5, 1.0, -1.0).double()
    dense = StepBatch(outcome, step_mask, torch.arange(b) % 3, votes, vote_mask, vote_valid)
    sparse = StepBatch(outcome, step_mask, (torch.arange(b) % 3) * 10**12 + 5, votes, vote_mask, vote_valid)
    got, want = batch_advantages_and_consistency(sparse), batch_advantages_and_consistency(dense)
    assert torch.equal(got.advantages, want.advantages) and torch.equal(got.targets, want.targets)
    assert_close(got.advantages, composed(sparse)[0])


@pytest.mark.parametrize(("b", "s", "m"), [(0, 3, 2), (2, 0, 2), (2, 3, 0), (3, 2, 1)])
def test_empty_axes_and_no_votes(b: int, s: int, m: int) -> None:
    outcome = torch.ones(b, dtype=torch.float64)
    step_mask = torch.ones(b, s, dtype=torch.bool)
    vote_mask = torch.zeros(b, s, m, dtype=torch.bool)  # no vote requested anywhere
    votes = torch.full((b, s, m), NAN, dtype=torch.float64)
    batch = StepBatch(outcome, step_mask, torch.zeros(b, dtype=torch.int64), votes, vote_mask, vote_mask)
    got = batch_advantages_and_consistency(batch)
    want = composed(batch)
    assert got.advantages.shape == (b, s) and got.targets.shape == (b, s, m)
    assert torch.equal(got.advantages, want[0]) and torch.equal(got.targets, want[1])


def test_degenerate_float32_steps_are_zero() -> None:
    """Three equal valid votes with R = 4/3 (float32 mean an ulp off) and three failures: z-scores are 0, not +-1."""
    votes = torch.tensor([[[1.0, 1.0, 1.0], [NAN, NAN, NAN]]] * 2)
    mask = torch.ones(2, 2, 3, dtype=torch.bool)
    valid = ~votes.isnan()
    out = integrated_advantages_and_consistency(
        torch.tensor([1.0, 1.0]),
        torch.ones(2, 2, dtype=torch.bool),
        torch.tensor([0, 0]),
        votes,
        mask,
        valid,
        lam=1 / 3,
    )
    assert torch.equal(out.targets, torch.zeros(2, 2, 3)) and torch.equal(out.advantages, torch.zeros(2, 2))


# ---- bad input: ValueError naming the argument -------------------------------------------------------------------


def good() -> dict[str, Any]:
    step_mask = torch.tensor([[True, True, True, False], [True, False, False, False], [True, True, True, True]])
    vote_mask = step_mask.unsqueeze(-1).expand(3, 4, 2).clone()
    vote_valid = vote_mask.clone()
    vote_valid[0, 0, 1] = False
    return {
        "outcome": torch.tensor([1.0, -1.0, 1.0]),
        "step_mask": step_mask,
        "group_index": torch.tensor([0, 0, 1]),
        "votes": torch.where(vote_valid, torch.tensor(1.0), torch.tensor(NAN)),
        "vote_mask": vote_mask,
        "vote_valid": vote_valid,
    }


def call(a: dict[str, Any], **kwargs: Any) -> FeedbackTargets:
    return integrated_advantages_and_consistency(
        a["outcome"], a["step_mask"], a["group_index"], a["votes"], a["vote_mask"], a["vote_valid"], **kwargs
    )


def _set(t: torch.Tensor, index: tuple[int, ...], value: Any) -> torch.Tensor:
    t = t.clone()
    t[index] = value
    return t


MUTATIONS: list[tuple[str, str, str, Callable[[Any], Any]]] = [
    # (argument mutated, argument the error must name, what it must say, mutation)
    ("outcome", "outcome", "shape", lambda t: t.unsqueeze(1)),
    ("outcome", "outcome", "floating", lambda t: t.long()),
    ("outcome", "outcome", "non-finite", lambda t: _set(t, (1,), NAN)),
    ("outcome", "outcome", "torch.Tensor", lambda t: t.tolist()),
    ("outcome", "step_mask|group_index|outcome", "shape", lambda t: t[:2]),
    ("step_mask", "step_mask", "bool", lambda t: t.float()),
    ("step_mask", "step_mask|votes", "shape", lambda t: t[:2]),
    ("step_mask", "step_mask|votes", "shape", lambda t: t[:, :3]),
    ("group_index", "group_index", "int64", lambda t: t.float()),
    ("group_index", "group_index", "non-negative", lambda t: t - 1),
    ("group_index", "group_index", "shape", lambda t: t[:2]),
    ("votes", "votes", "floating", lambda t: t.nan_to_num().long()),
    ("votes", "votes", "shape", lambda t: t[:, :, 0]),
    ("votes", "votes", "shape", lambda t: t[:, :3]),
    ("votes", "votes", "non-finite", lambda t: _set(t, (2, 1, 0), NAN)),
    ("votes", "votes", "non-finite", lambda t: _set(t, (2, 1, 0), float("inf"))),
    ("votes", "votes", r"\[-1, 1\]", lambda t: _set(t, (2, 1, 0), 1.5)),
    ("votes", "votes", r"\[-1, 1\]", lambda t: _set(t, (0, 0, 0), -3.0)),
    ("vote_mask", "vote_mask", "bool", lambda t: t.float()),
    ("vote_mask", "vote_mask", "shape", lambda t: t[..., :1]),
    ("vote_mask", "vote_mask", "padded step", lambda t: _set(t, (1, 3, 0), True)),
    ("vote_mask", "vote_valid", "outside vote_mask", lambda t: _set(t, (2, 1, 0), False)),
    ("vote_valid", "vote_valid", "bool", lambda t: t.float()),
    ("vote_valid", "vote_valid", "shape", lambda t: t[..., :1]),
    ("vote_valid", "vote_valid", "outside vote_mask", lambda t: _set(t, (1, 3, 0), True)),
]


@pytest.mark.parametrize(
    ("arg", "named", "expect", "mutate"), MUTATIONS, ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)]
)
def test_bad_argument_raises_naming_it(arg: str, named: str, expect: str, mutate: Callable[[Any], Any]) -> None:
    args = good()
    call(args)  # the good arguments pass
    args[arg] = mutate(args[arg])
    with pytest.raises(ValueError, match=f"^({named}): ") as info:
        call(args)
    assert re.search(expect, str(info.value)), str(info.value)


def test_garbage_off_the_masks_is_accepted() -> None:
    a = good()
    a["votes"] = torch.where(a["vote_valid"], a["votes"], torch.tensor(1e30))  # and NaN in good() already
    a["votes"][0, 0, 1] = -float("inf")  # an unparseable slot
    call(a)


@pytest.mark.parametrize("name", ["lam", "eps", "format_penalty"])
@pytest.mark.parametrize("value", [NAN, float("inf"), True, None, "1"])
def test_bad_scalars(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{name}: "):
        call(good(), **{name: value})


@pytest.mark.parametrize("name", ["lam", "eps"])
def test_negative_scalars(name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}: "):
        call(good(), **{name: -0.5})


def test_bad_singleton_and_batch() -> None:
    with pytest.raises(ValueError, match="^singleton: "):
        call(good(), singleton="raw")
    a = good()
    with pytest.raises(ValueError, match="^batch: .*StepBatch"):
        batch_advantages_and_consistency(a)  # type: ignore[arg-type]
    no_votes = StepBatch(a["outcome"], a["step_mask"], a["group_index"])
    with pytest.raises(ValueError, match="^batch: .*votes"):
        batch_advantages_and_consistency(no_votes)
