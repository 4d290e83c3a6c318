"""What the module-update tests share: ragged rows on the host, handed over as the rollout data module does, and one
fitted step under a real ``Trainer``."""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from rlanything_core.collect.batching import TokenRows
from rlanything_core.lightning.module import RLAnythingModule
from rlanything_core.loop.iteration import IterationData, TrainingRows


def ragged_rows(n: int, length: int, *, seed: int = 0, shortest: int | None = None) -> TrainingRows:
    """``n`` right-padded rows of uneven length (``shortest`` to ``length``, default ``length // 2``) on the CPU,
    two task groups, a 3-token prompt then the response."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 2 if shortest is None else shortest, length + 1, (n,), generator=gen)
    ids = torch.randint(1, 64, (n, length), generator=gen)
    positions = torch.arange(length)
    attention = positions < lengths[:, None]
    response = attention & (positions >= 3)
    return TrainingRows(
        rows=TokenRows(ids, attention, response, torch.zeros(n, 3).long()),
        advantages=torch.randn(n, generator=gen),
        group=torch.arange(n) % 2,
    )


class HostRows(L.LightningDataModule):
    """Hands the iteration's rows over on the host, as ``lightning.datamodule.RolloutDataModule`` does."""

    def __init__(self, data: IterationData) -> None:
        super().__init__()
        self.data = data

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader([self.data], batch_size=None, collate_fn=lambda batch: batch)

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return batch


def fit_one_step(module: RLAnythingModule, data: IterationData) -> None:
    """One training step (one iteration's updates) of ``module`` on ``data`` under a real CPU ``Trainer``."""
    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_steps=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(module, datamodule=HostRows(data))
