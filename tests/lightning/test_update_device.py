"""The update used to crash on its first step on a GPU, for every strategy: the rows' advantages reached the loss
on the CPU while the log-probs were on ``cuda:0`` (``Expected all tensors to be on the same device``).

No CPU test saw it, because on a CPU every tensor is on the same device. Here the models live on ``meta`` (a device
without data: mixing it with ``cpu`` raises the same error) while the loop's rows arrive on the CPU, as they do from
the collectors, and the whole update runs in the real loop under Fabric: both models, the policy and the consistency
losses, several micro-batches and minibatches, clipping and the optimizer steps. On the code of f113c84 it fails: first
at the host-side choice of scored positions (``nonzero`` on the device), and with that mended, at the advantages
(``Tensor on device cpu is not on the expected device meta``).

FSDP2 cannot run this way: it refuses parameters on ``meta`` ("FSDP parameters should be materialized from meta
device before training"). Its branches of the same update share this path (``_row_logprobs``, the loss call); their
collectives use the module's device (``test_sharding.py::test_the_modules_collectives_use_its_device``), and the GPU
check (``python -m benchmarks.gpu_check``, ``pytest -m gpu``) runs the update under FSDP2 on a real GPU.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from _update_rows import FixedRows, cpu_runtime, fit_one_step, ragged_rows, updates

from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import LoopModels, RLAnythingLoop
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.models.tiny import tiny_causal_lm


class _OnMeta(FabricRuntime):
    """One CPU process whose device becomes ``meta`` once the models are placed and their optimizers built (as a GPU
    would then hold them); the metrics are read from the update history, not logged."""

    on_meta = False

    @property
    def device(self) -> torch.device:
        return torch.device("meta") if self.on_meta else super().device

    def log(self, metrics: dict[str, float], step: int) -> None:
        """The loggers read logged values back: ``meta`` has none."""


def _eager(model: Any) -> Any:
    """Eager attention: SDPA's mask builder asks whether the padding mask is all ones, which ``meta`` cannot answer."""
    model.set_attn_implementation("eager")
    return model


@pytest.mark.parametrize("warmup_steps", [0, 3])  # the learning-rate warmup's step on the models' device too
def test_the_whole_update_follows_the_models_device(warmup_steps: int) -> None:
    runtime = _OnMeta(cpu_runtime().fabric)
    policy, judge = updates(
        _eager(tiny_causal_lm(64, hidden=16, layers=1, seed=0)),
        _eager(tiny_causal_lm(64, hidden=16, layers=1, seed=1)),
        runtime=runtime,
        judge_loss=PolicyLoss(),
        policy_updates=2,
        judge_updates=2,
        micro_batch_tokens=24,  # several micro-batches per minibatch
        max_grad_norm=1.0,
        warmup_steps=warmup_steps,
    )
    assert judge is not None
    data = IterationData(iteration=0, policy=ragged_rows(6, 12, seed=0), judge=ragged_rows(8, 10, seed=1))
    loop = RLAnythingLoop(FixedRows(data), runtime, policy, judge.model, judge, iterations=1, checkpoint_dir="unused")
    loop.setup()
    loop.models.to("meta")
    runtime.on_meta = True
    history = loop.update(data)
    assert history["policy/updates"] == 2 and history["judge/updates"] == 2  # both models stepped, twice
    assert {p.device.type for p in loop.models.parameters()} == {"meta"}
    assert isinstance(loop.models, LoopModels)


def test_the_update_still_learns_on_the_cpu() -> None:
    """The same update on one device moves the weights (the meta test above cannot see values)."""
    policy = tiny_causal_lm(64, hidden=16, layers=1, seed=0)
    before = [p.detach().clone() for p in policy.parameters()]
    update, _ = updates(policy, policy_updates=2, micro_batch_tokens=24)
    loop = fit_one_step(update, IterationData(iteration=0, policy=ragged_rows(6, 12, seed=0), judge=None))
    assert loop.update_history[0]["policy/updates"] == 2
    assert any(not torch.equal(b, p) for b, p in zip(before, policy.parameters()))
