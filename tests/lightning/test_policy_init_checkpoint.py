"""``model.policy_init`` takes a warm start's state dict or a run's checkpoint (``assembly.backends.policy_weights``),
so that ``eval_only`` evaluates the policy a run trained, on the episodes of the run's "before" row."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from _update_rows import FixedRows, ragged_rows, updates

from rlanything_core.assembly.backends import policy_weights
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.models.tiny import tiny_causal_lm


def test_a_run_checkpoint_gives_its_trained_policy_not_its_judge() -> None:
    policy, judge = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0),
        tiny_causal_lm(64, hidden=16, layers=1, seed=1),
        judge_loss=PolicyLoss(),
        policy_optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2),
        judge_optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2),
    )
    assert judge is not None
    untrained = {k: v.clone() for k, v in policy.model.state_dict().items()}
    data = IterationData(iteration=0, policy=ragged_rows(6, 12, seed=0), judge=ragged_rows(8, 10, seed=1))
    with tempfile.TemporaryDirectory() as tmp:
        RLAnythingLoop(
            FixedRows(data), policy.runtime, policy, judge.model, judge, iterations=1, checkpoint_dir=tmp, resume=False
        ).run()
        loaded = policy_weights(str(Path(tmp) / "last.ckpt"))
    trained = policy.model.state_dict()
    assert loaded.keys() == trained.keys()
    assert all(torch.equal(loaded[k], trained[k]) for k in trained)
    assert any(not torch.equal(loaded[k], untrained[k]) for k in trained)  # the checkpoint's weights, not the start


def test_a_state_dict_is_taken_as_it_is(tmp_path: Path) -> None:
    model = tiny_causal_lm(64, hidden=16, layers=1, seed=0)
    torch.save(model.state_dict(), tmp_path / "policy.pt")
    loaded = policy_weights(str(tmp_path / "policy.pt"))
    assert all(torch.equal(loaded[k], v) for k, v in model.state_dict().items())
