"""The module's packed update (one sequence per micro-batch, head at response positions) equals the padded one."""

from __future__ import annotations

import copy
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from rlanything_core.collect.batching import TokenRows
from rlanything_core.lightning.module import RLAnythingModule
from rlanything_core.loop.iteration import IterationData, TrainingRows
from rlanything_core.models.tiny import tiny_causal_lm


def _rows(n: int, length: int, seed: int) -> TrainingRows:
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 3, length + 1, (n,), generator=gen)
    ids = torch.randint(1, 64, (n, length), generator=gen)
    positions = torch.arange(length)
    attention = positions < lengths[:, None]
    response = attention & (positions >= 3)
    return TrainingRows(
        rows=TokenRows(ids, attention, response, torch.full(ids.shape, float("nan")), torch.zeros(n, 3).long()),
        advantages=torch.randn(n, generator=gen),
        group=torch.arange(n) % 2,
    )


class _Rows(L.LightningDataModule):
    """Hands the rows over on the host, as ``lightning.datamodule.RolloutDataModule`` does."""

    def __init__(self, data: IterationData) -> None:
        super().__init__()
        self.data = data

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader([self.data], batch_size=None, collate_fn=lambda batch: batch)

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return batch


def _updated(packing: bool, policy: Any, data: IterationData) -> RLAnythingModule:
    module = RLAnythingModule(
        policy, policy_updates=2, micro_batch_tokens=40, packing=packing,
        policy_optimizer=lambda params: torch.optim.SGD(params, lr=0.5),
    )  # fmt: skip
    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_steps=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(module, datamodule=_Rows(data))
    return module


def test_packed_update_equals_padded_update() -> None:
    policy = tiny_causal_lm(64, hidden=16, layers=2, seed=0)
    data = IterationData(iteration=0, policy=_rows(9, 14, seed=0), judge=None)
    packed = _updated(True, copy.deepcopy(policy), data)
    padded = _updated(False, copy.deepcopy(policy), data)
    moved = False
    for (name, a), b, before in zip(packed.policy.named_parameters(), padded.policy.parameters(), policy.parameters()):
        assert torch.allclose(a, b, atol=1e-5), name
        moved |= not torch.allclose(a, before, atol=1e-4)
    assert moved  # the update did change the weights (a check that cannot pass on a no-op)
    # (the logged loss is a mean over micro-batches, which the two split differently: only the steps compare)
    assert packed.update_history[0]["policy/updates"] == padded.update_history[0]["policy/updates"] == 2
