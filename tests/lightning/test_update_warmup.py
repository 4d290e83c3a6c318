"""Learning-rate warmup of an RL update (``optim.<role>_warmup_steps``, ``training/warmup.py``): the k-th optimizer step
runs at ``lr * min(1, (k + 1) / N)``, the count lives in the optimizer's state (a resumed run continues the ramp), and
no warmup leaves the update exactly as before."""

from __future__ import annotations

import tempfile

import pytest
import torch
from _update_rows import FixedRows, ragged_rows, updates
from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.update import ModelUpdate
from rlanything_core.training.warmup import warmup_factor

LR = 1e-2


def _policy_update(warmup_steps: int) -> ModelUpdate:
    policy, _ = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0),
        policy_optimizer=lambda p: torch.optim.AdamW(p, lr=LR),
        policy_updates=2,
        micro_batch_tokens=24,
        warmup_steps=warmup_steps,
    )
    return policy


def _loop(update: ModelUpdate, checkpoint_dir: str, iterations: int) -> RLAnythingLoop:
    data = IterationData(iteration=0, policy=ragged_rows(6, 12, seed=0), judge=None)
    return RLAnythingLoop(
        FixedRows(data), update.runtime, update, None, None,
        iterations=iterations, checkpoint_dir=checkpoint_dir, resume=True,
    )  # fmt: skip


def _step_lrs(update: ModelUpdate) -> list[float]:
    """The learning rate of every optimizer step ``update`` takes from now on (recorded as the step is taken)."""
    seen: list[float] = []
    original = update._sync_and_step

    def recorded(optimizer: torch.optim.Optimizer) -> None:
        original(optimizer)
        seen.append(float(optimizer.param_groups[0]["lr"]))

    update._sync_and_step = recorded  # type: ignore[method-assign]
    return seen


@given(st.integers(0, 1000), st.integers(1, 100))
def test_the_factor_ramps_linearly_to_one_and_stays(step: int, warmup: int) -> None:
    factor = warmup_factor(step, warmup)
    assert 0 < factor <= 1
    assert factor == (1.0 if step + 1 >= warmup else pytest.approx((step + 1) / warmup))
    assert warmup_factor(step, 0) == 1.0


def test_each_step_runs_at_its_fraction_of_the_rate() -> None:
    update = _policy_update(warmup_steps=5)
    lrs = _step_lrs(update)
    with tempfile.TemporaryDirectory() as tmp:
        _loop(update, tmp, iterations=4).run()  # 2 steps an iteration
    assert lrs == pytest.approx([LR * k / 5 for k in (1, 2, 3, 4, 5)] + [LR] * 3)


def test_a_resumed_run_continues_the_ramp_and_ends_where_an_uninterrupted_one_does() -> None:
    with tempfile.TemporaryDirectory() as straight, tempfile.TemporaryDirectory() as resumed:
        whole = _policy_update(warmup_steps=6)
        _loop(whole, straight, iterations=4).run()
        _loop(_policy_update(warmup_steps=6), resumed, iterations=2).run()  # stops after 4 of the 6 ramp steps
        second = _policy_update(warmup_steps=6)
        lrs = _step_lrs(second)
        _loop(second, resumed, iterations=4).run()
    assert lrs == pytest.approx([LR * 5 / 6, LR, LR, LR])
    for a, b in zip(whole.model.parameters(), second.model.parameters()):
        assert torch.equal(a, b)


def test_no_warmup_is_the_update_as_before() -> None:
    default = _policy_update(warmup_steps=0)
    plain = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0),
        policy_optimizer=lambda p: torch.optim.AdamW(p, lr=LR),
        policy_updates=2,
        micro_batch_tokens=24,
    )[0]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        _loop(default, a, iterations=2).run()
        _loop(plain, b, iterations=2).run()
    for p, q in zip(default.model.parameters(), plain.model.parameters()):
        assert torch.equal(p, q)
    assert default.optimizer is not None
    assert "warmup_step" not in default.optimizer.param_groups[0]  # nothing added to the optimizer's state


def test_a_warmup_makes_the_first_steps_smaller() -> None:
    cold, warm = _policy_update(warmup_steps=0), _policy_update(warmup_steps=10)
    start = [p.detach().clone() for p in cold.model.parameters()]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        _loop(cold, a, iterations=1).run()
        _loop(warm, b, iterations=1).run()

    def moved(update: ModelUpdate) -> float:
        return sum(float((p.detach() - s).abs().sum()) for p, s in zip(update.model.parameters(), start))

    assert moved(warm) < 0.5 * moved(cold)


def test_a_negative_warmup_is_refused() -> None:
    with pytest.raises(ValueError, match="policy_warmup_steps: expected >= 0, got -1"):
        _policy_update(warmup_steps=-1)
