"""``IterationCheckpoint(every=N)``: a save every N iterations and after the last, each save's seconds reported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from rlanything_core.lightning.checkpoint import IterationCheckpoint, read_checkpoint


@dataclass(frozen=True)
class _Batch:
    iteration: int


class _Iterations(L.LightningDataModule):
    """One batch per epoch (one iteration), as ``RolloutDataModule``; ``completed`` is what the checkpoint marks."""

    def __init__(self) -> None:
        super().__init__()
        self.completed = 0

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader([_Batch(self.trainer.current_epoch)], batch_size=None, collate_fn=lambda b: b)

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {"completed": self.completed}


class _Module(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.update_history: list[dict[str, float]] = []

    def training_step(self, batch: _Batch, batch_idx: int) -> torch.Tensor:
        self.update_history.append({"iteration": float(batch.iteration)})
        return self.layer(torch.ones(1, 2)).pow(2).sum()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_saves_every_n_and_the_last_and_reports_each_saves_time(tmp_path: Path) -> None:
    callback = IterationCheckpoint(tmp_path, every=2)
    module = _Module()
    trainer = L.Trainer(
        accelerator="cpu", max_epochs=5, callbacks=[callback], logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, reload_dataloaders_every_n_epochs=1,
    )  # fmt: skip
    trainer.fit(module, datamodule=_Iterations())
    assert callback.saved == [2, 4, 5]  # every 2nd, and the last although 5 is odd
    assert sorted(callback.seconds) == [1, 2, 3, 4, 5]
    assert all(callback.seconds[k] > 0 for k in callback.saved)
    saved = read_checkpoint(callback.last)
    assert saved["global_step"] == 5  # the last iteration's state, not the 4th's
    assert [e.get("time/checkpoint_s") is not None for e in module.update_history] == [True] * 5


@pytest.mark.parametrize(("every", "total", "due"), [(1, 3, [1, 2, 3]), (3, 7, [3, 6, 7]), (4, None, [4])])
def test_due(every: int, total: int | None, due: list[int]) -> None:
    callback = IterationCheckpoint("unused", every=every)
    assert [k for k in range(1, (total or 7) + 1) if callback.due(k, total)] == due


@pytest.mark.parametrize("every", [0, -1, True, 1.5])
def test_a_bad_interval_is_refused(every: Any) -> None:
    with pytest.raises(ValueError, match="every: expected an integer >= 1"):
        IterationCheckpoint("unused", every=every)
