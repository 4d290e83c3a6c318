"""PPO epochs: ``policy_epochs`` / ``judge_epochs`` passes over an iteration's rows, each of ``*_updates`` minibatch
steps, all against the old log-probs of the weights before the iteration's first step."""

from __future__ import annotations

import pytest
import torch
from _update_rows import fit_one_step, ragged_rows, updates

from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.update import ModelUpdate


def _module(**kwargs: int) -> tuple[ModelUpdate, ModelUpdate | None]:
    return updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0),
        tiny_causal_lm(64, hidden=16, layers=1, seed=1),
        judge_loss=PolicyLoss(),
        policy_optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2),
        judge_optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2),
        micro_batch_tokens=24,
        **kwargs,
    )


def _fit(pair: tuple[ModelUpdate, ModelUpdate | None]) -> RLAnythingLoop:
    return fit_one_step(pair[0], _data(), pair[1])


def _data() -> IterationData:
    return IterationData(iteration=0, policy=ragged_rows(6, 12, seed=0), judge=ragged_rows(8, 10, seed=1))


def test_each_epoch_makes_its_minibatch_steps_and_logs_its_later_passes_apart() -> None:
    module = _module(policy_updates=2, judge_updates=1, policy_epochs=3, judge_epochs=2)
    (history,) = _fit(module).update_history
    assert history["policy/updates"] == 6 and history["judge/updates"] == 2
    for name in ("policy", "judge"):
        assert {f"{name}/approx_kl", f"{name}/clip_frac", f"{name}/later/approx_kl", f"{name}/later/clip_frac"} <= set(
            history
        )
        assert history[f"{name}/later/approx_kl"] > 0.0  # the later passes see how far the first one moved


def test_one_epoch_is_the_single_pass_and_logs_nothing_later() -> None:
    default, explicit = (
        _module(policy_updates=2, judge_updates=2),
        _module(policy_updates=2, judge_updates=2, policy_epochs=1, judge_epochs=1),
    )
    default_loop, explicit_loop = _fit(default), _fit(explicit)
    assert not any("/later/" in k for k in default_loop.update_history[0])
    assert default_loop.update_history[0]["policy/updates"] == 2
    for a, b in zip(default_loop.models.parameters(), explicit_loop.models.parameters()):
        assert torch.equal(a, b)


def test_old_logprobs_stay_those_of_the_pre_update_weights_across_epochs() -> None:
    """One minibatch, two passes: the second pass's ratio is against the weights before the first step.

    Were the old log-probs recomputed per pass, the second pass would start at ratio 1 (approx KL exactly 0), and the
    old log-probs would be computed twice.
    """
    module = _module(policy_updates=1, judge_updates=1, policy_epochs=2, judge_epochs=2)
    calls: list[str] = []
    for update in module:
        assert update is not None
        original = update.old_logprobs

        def counted(rows, name=update.name, original=original):  # type: ignore[no-untyped-def]
            calls.append(name)
            return original(rows)

        update.old_logprobs = counted  # type: ignore[method-assign]
    (history,) = _fit(module).update_history
    assert calls == ["policy", "judge"]  # once per model and iteration, before any step
    assert history["policy/approx_kl"] == pytest.approx(0.0, abs=1e-6)  # the first pass starts at the old weights
    assert history["policy/later/approx_kl"] > 1e-6 and history["judge/later/approx_kl"] > 1e-6


@pytest.mark.parametrize(("bad", "name"), [({"policy_epochs": 0}, "policy"), ({"judge_epochs": 0}, "judge")])
def test_fewer_than_one_epoch_is_refused(bad: dict[str, int], name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}_epochs: expected >= 1, got 0"):
        _module(**bad)
