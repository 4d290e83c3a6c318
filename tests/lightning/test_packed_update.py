"""The packed update (one sequence per micro-batch, head at response positions) equals the padded one."""

from __future__ import annotations

import copy
from typing import Any

import torch
from _update_rows import fit_one_step, ragged_rows, updates

from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.models.tiny import tiny_causal_lm


def _updated(packing: bool, policy: Any, data: IterationData) -> RLAnythingLoop:
    update, _ = updates(
        policy, policy_updates=2, micro_batch_tokens=40, packing=packing,
        policy_optimizer=lambda params: torch.optim.SGD(params, lr=0.5),
    )  # fmt: skip
    return fit_one_step(update, data)


def test_packed_update_equals_padded_update() -> None:
    policy = tiny_causal_lm(64, hidden=16, layers=2, seed=0)
    data = IterationData(iteration=0, policy=ragged_rows(9, 14, seed=0, shortest=14 // 3), judge=None)
    packed = _updated(True, copy.deepcopy(policy), data)
    padded = _updated(False, copy.deepcopy(policy), data)
    moved = False
    for (name, a), b, before in zip(packed.policy.named_parameters(), padded.policy.parameters(), policy.parameters()):
        assert torch.allclose(a, b, atol=1e-5), name
        moved |= not torch.allclose(a, before, atol=1e-4)
    assert moved  # the update did change the weights (a check that cannot pass on a no-op)
    # (the logged loss is a mean over micro-batches, which the two split differently: only the steps compare)
    assert packed.update_history[0]["policy/updates"] == padded.update_history[0]["policy/updates"] == 2
