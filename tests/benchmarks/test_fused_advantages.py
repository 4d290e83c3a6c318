"""The fused entry point equals the composition of the public functions and the plain-Python reference."""

from __future__ import annotations

import doctest
import re
from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import benchmarks.fused_advantages.fused as fused_module
from benchmarks.fused_advantages import _kernels
from benchmarks.fused_advantages.fused import (
    Backend,
    FeedbackTargets,
    batch_advantages_and_consistency,
    integrated_advantages_and_consistency,
    kernels_available,
)
from rlanything_core.advantages.functional import SingletonRule, integrated_step_reward, standardize_per_step
from rlanything_core.rewards import consistency_targets, standardize_votes
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches, with_garbage_padding
from rlanything_core.types import StepBatch

SETTINGS = settings(max_examples=80, deadline=None)
TOL = 1e-5
NAN = float("nan")
# every test that computes runs on both implementations; the compiled one only where numba is installed (the
# ``fast`` extra): the uncompiled kernels are checked below either way
BACKENDS: list[Backend] = ["torch", "numba"] if kernels_available() else ["torch"]
with_backends = pytest.mark.parametrize("backend", BACKENDS)


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


@with_backends
@SETTINGS
@given(
    batch=step_batches(),
    lam=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    rule=st.sampled_from(list(SingletonRule)),
    penalty=st.sampled_from([-2.0, -1.0, 0.0, 0.5]),
    single=st.booleans(),
)
def test_matches_composition_and_plain(
    backend: Backend, batch: StepBatch, lam: float, rule: SingletonRule, penalty: float, single: bool
) -> None:
    if single:
        batch = as_float32(batch)
    got = batch_advantages_and_consistency(batch, lam=lam, singleton=rule, format_penalty=penalty, backend=backend)
    assert isinstance(got, FeedbackTargets)
    assert got.advantages.dtype == got.targets.dtype == batch.outcome.dtype
    for want in (
        composed(batch, lam=lam, singleton=rule, format_penalty=penalty),
        referenced(batch, lam=lam, singleton=rule, format_penalty=penalty),
    ):
        assert_close(got.advantages, want[0])
        assert_close(got.targets, want[1])


@with_backends
@SETTINGS
@given(batch=step_batches(max_groups=3, max_group_size=4, max_steps=4), lam=st.sampled_from([0.5, 1.0]))
def test_float64_matches_composition_tightly(backend: Backend, batch: StepBatch, lam: float) -> None:
    """In float64 the only differences are summation order: far below the 1e-5 used against float32."""
    got = batch_advantages_and_consistency(batch, lam=lam, backend=backend)
    want = composed(batch, lam=lam)
    assert_close(got.advantages, want[0], tol=1e-12)
    assert_close(got.targets, want[1], tol=1e-12)


@with_backends
@SETTINGS
@given(batch=step_batches(), extra_steps=st.integers(0, 3), extra_votes=st.integers(0, 2), seed=st.integers(0, 99))
def test_padding_invariance(backend: Backend, batch: StepBatch, extra_steps: int, extra_votes: int, seed: int) -> None:
    padded = with_garbage_padding(batch, extra_steps=extra_steps, extra_votes=extra_votes, seed=seed)
    small = batch_advantages_and_consistency(batch, backend=backend)
    big = batch_advantages_and_consistency(padded, backend=backend)
    b, s, m = small.targets.shape
    assert torch.equal(big.advantages[:, :s], small.advantages)
    assert torch.equal(big.targets[:, :s, :m], small.targets)
    assert not big.advantages[:, s:].any() and not big.targets[:, s:].any() and not big.targets[..., m:].any()


@SETTINGS
@given(batch=step_batches(max_groups=3, max_group_size=5), cells=st.integers(1, 40))
def test_row_chunks_do_not_change_the_result(batch: StepBatch, cells: int) -> None:
    """Small chunks (down to one rollout each, with a ragged last chunk) give bit-identical outputs (torch path)."""
    whole = batch_advantages_and_consistency(batch, backend="torch")
    saved = fused_module._CHUNK_CELLS
    fused_module._CHUNK_CELLS = cells
    try:
        chunked = batch_advantages_and_consistency(batch, backend="torch")
    finally:
        fused_module._CHUNK_CELLS = saved
    assert torch.equal(chunked.advantages, whole.advantages) and torch.equal(chunked.targets, whole.targets)


@with_backends
@settings(max_examples=20, deadline=None)
@given(batch=step_batches(max_steps=1, max_votes=2))  # S = 1 too: an (B, 1) outcome broadcast is contiguous
def test_inputs_are_left_unchanged(backend: Backend, batch: StepBatch) -> None:
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    inputs = (batch.outcome, batch.step_mask, batch.group_index, batch.votes, batch.vote_mask, batch.vote_valid)
    before = [t.clone() for t in inputs]
    batch_advantages_and_consistency(batch, backend=backend)
    for x, y in zip(before, inputs):
        torch.testing.assert_close(y, x, rtol=0, atol=0, equal_nan=True)


@with_backends
def test_sparse_group_ids_take_the_unique_path(backend: Backend) -> None:
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
    got = batch_advantages_and_consistency(sparse, backend=backend)
    want = batch_advantages_and_consistency(dense, backend=backend)
    assert torch.equal(got.advantages, want.advantages) and torch.equal(got.targets, want.targets)
    assert_close(got.advantages, composed(sparse)[0])


@pytest.mark.parametrize(  # dense ids (a bincount), and sparse ones (unique)
    ("scale", "dtype"), [(1, torch.int64), (7, torch.int64), (7, torch.int32), (10**12, torch.int64)]
)
def test_group_compaction_in_numpy_and_torch_agree(scale: int, dtype: torch.dtype) -> None:
    ids = (torch.tensor([5, 0, 3, 3, 5, 9, 0, 5]) * scale + 2).to(dtype)
    want = torch.tensor([2, 0, 1, 1, 2, 3, 0, 2])
    for compact, k in (fused_module._compact_groups(ids), fused_module._compact_ids_torch(ids)):
        assert k == 4 and compact.dtype == torch.int64 and torch.equal(compact, want)
    for empty in (fused_module._compact_groups(ids[:0]), fused_module._compact_ids_torch(ids[:0])):
        assert empty[1] == 0 and empty[0].shape == (0,)


@with_backends
@pytest.mark.parametrize(("b", "s", "m"), [(0, 3, 2), (2, 0, 2), (3, 2, 1)])  # m = 0: refused by StepBatch (below)
def test_empty_axes_and_no_votes(backend: Backend, b: int, s: int, m: int) -> None:
    outcome = torch.ones(b, dtype=torch.float64)
    step_mask = torch.ones(b, s, dtype=torch.bool)
    vote_mask = torch.zeros(b, s, m, dtype=torch.bool)  # no vote requested anywhere
    votes = torch.full((b, s, m), NAN, dtype=torch.float64)
    batch = StepBatch(outcome, step_mask, torch.zeros(b, dtype=torch.int64), votes, vote_mask, vote_mask)
    got = batch_advantages_and_consistency(batch, backend=backend)
    want = composed(batch)
    assert got.advantages.shape == (b, s) and got.targets.shape == (b, s, m)
    assert torch.equal(got.advantages, want[0]) and torch.equal(got.targets, want[1])


def test_a_vote_grid_without_vote_slots_is_refused() -> None:
    """Votes of shape (B, S, 0) would silently give outcome-only advantages: StepBatch refuses m = 0."""
    mask = torch.zeros(2, 3, 0, dtype=torch.bool)
    with pytest.raises(ValueError, match="m >= 1"):
        StepBatch(torch.ones(2), torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, dtype=torch.int64),
                  torch.zeros(2, 3, 0), mask, mask)


@with_backends
def test_degenerate_float32_steps_are_zero(backend: Backend) -> None:
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
        backend=backend,
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


@with_backends
@pytest.mark.parametrize(
    ("arg", "named", "expect", "mutate"), MUTATIONS, ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)]
)
def test_bad_argument_raises_naming_it(
    backend: Backend, arg: str, named: str, expect: str, mutate: Callable[[Any], Any]
) -> None:
    args = good()
    call(args, backend=backend)  # the good arguments pass
    args[arg] = mutate(args[arg])
    with pytest.raises(ValueError, match=f"^({named}): ") as info:
        call(args, backend=backend)
    assert re.search(expect, str(info.value)), str(info.value)


@with_backends
def test_garbage_off_the_masks_is_accepted(backend: Backend) -> None:
    a = good()
    a["votes"] = torch.where(a["vote_valid"], a["votes"], torch.tensor(1e30))  # and NaN in good() already
    a["votes"][0, 0, 1] = -float("inf")  # an unparseable slot
    call(a, backend=backend)


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


# ---- the two implementations: compiled loops (numba) and tensor ops (torch) ---------------------------------------


def python_kernels() -> _kernels.Kernels:
    """The kernels uncompiled: the same loops run by the interpreter (slow; fine on small batches, no numba needed)."""
    return _kernels.Kernels(step_feedback=_kernels.step_feedback, standardize_cells=_kernels.standardize_cells)


@settings(max_examples=40, deadline=None)
@given(
    batch=step_batches(max_groups=3, max_group_size=4, max_steps=4),
    rule=st.sampled_from(list(SingletonRule)),
    penalty=st.sampled_from([-2.0, 0.5]),
    single=st.booleans(),
)
def test_uncompiled_kernels_match_the_tensor_path(
    batch: StepBatch, rule: SingletonRule, penalty: float, single: bool
) -> None:
    if single:
        batch = as_float32(batch)
    want = batch_advantages_and_consistency(batch, singleton=rule, format_penalty=penalty, backend="torch")
    with patch.object(_kernels, "compiled", python_kernels):
        got = batch_advantages_and_consistency(batch, singleton=rule, format_penalty=penalty, backend="numba")
    tol = TOL if single else 1e-12
    assert got.advantages.dtype == got.targets.dtype == batch.outcome.dtype
    assert_close(got.advantages, want.advantages, tol=tol)
    assert_close(got.targets, want.targets, tol=tol)


def test_auto_runs_the_kernels_when_available() -> None:
    calls: list[str] = []
    inner = python_kernels()

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            calls.append(name)
            return fn(*args)

        return wrapper

    spy = _kernels.Kernels(counted("feedback", inner.step_feedback), counted("cells", inner.standardize_cells))
    with patch.object(_kernels, "compiled", lambda: spy):
        call(good())
        assert calls == ["feedback", "cells"]
        call(good(), backend="torch")
        assert calls == ["feedback", "cells"]
        with pytest.raises(ValueError, match="^votes: "):  # the kernel reports, the tensor path names the error
            call({**good(), "votes": _set(good()["votes"], (2, 1, 0), 1.5)})
        assert calls == ["feedback", "cells", "feedback"]


def test_numba_backend_refuses_what_it_cannot_run() -> None:
    with patch.object(_kernels, "compiled", lambda: None):
        assert not kernels_available()
        with pytest.raises(ValueError, match="^backend: .*numba is not installed"):
            call(good(), backend="numba")
        fallback = call(good())  # auto: the tensor path
    want = call(good(), backend="torch")
    assert torch.equal(fallback.advantages, want.advantages) and torch.equal(fallback.targets, want.targets)
    half = {**good(), "votes": good()["votes"].half()}
    with patch.object(_kernels, "compiled", python_kernels):
        with pytest.raises(ValueError, match="^backend: .*float32 or float64"):
            call(half, backend="numba")
        assert call(half).targets.dtype == torch.float32  # auto: the tensor path (outcome is float32)
    with pytest.raises(ValueError, match="^backend: "):
        call(good(), backend="cuda")  # type: ignore[arg-type]


def kernel_status(votes: list[float], code: list[int], live: bool = True) -> int:
    """``step_feedback`` on one step of ``len(votes)`` slots (uncompiled: NaN arithmetic would warn)."""
    m = len(votes)
    with np.errstate(invalid="ignore"):
        return _kernels.step_feedback(
            np.array(votes, dtype=np.float32), np.array(code, dtype=np.uint8), np.array([live]),
            1.0, 1e-8, 1e-6, -2.0, np.ones(1), np.empty(m, dtype=np.float32), tuple(range(m)),
        )  # fmt: skip


def test_kernel_reports_bad_input() -> None:
    assert kernel_status([1.0, NAN, 9.0], [1, 2, 0]) == _kernels.OK  # garbage off the valid votes is fine
    assert kernel_status([1.0, -1.0], [1, 255]) == _kernels.BAD_INPUT  # valid but not requested
    assert kernel_status([1.0, NAN], [1, 1]) == _kernels.BAD_INPUT
    assert kernel_status([1.0, float("inf")], [1, 1]) == _kernels.BAD_INPUT
    assert kernel_status([1.0, 1.5], [1, 1]) == _kernels.BAD_INPUT
    assert kernel_status([1.0, 1.0], [1, 2], live=False) == _kernels.BAD_INPUT  # a vote at a padded step
    assert kernel_status([NAN, NAN], [0, 0], live=False) == _kernels.OK
