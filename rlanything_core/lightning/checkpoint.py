"""Atomic, per-iteration checkpoints of the whole loop.

Lightning writes a checkpoint file in place; a crash mid-write would leave a truncated ``last.ckpt`` and no way to
resume. ``IterationCheckpoint`` saves to a temporary file, fsyncs it and renames it over ``last.ckpt`` (the rename is
atomic), after every iteration. The checkpoint holds the policy and judge weights, both optimizers, the data
module's state (completed iterations, RNG states; the task pool is rolled back to the matching snapshot on load) and
Lightning's loop counters (so the logger's step continues).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lightning as L

__all__ = ["IterationCheckpoint", "atomic_save_checkpoint"]


def atomic_save_checkpoint(trainer: L.Trainer, path: str | os.PathLike[str]) -> None:
    """``trainer.save_checkpoint`` to a temporary file, then fsync and ``os.replace`` (rank 0 renames)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    trainer.save_checkpoint(str(tmp))
    if trainer.is_global_zero:
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    trainer.strategy.barrier("atomic_save_checkpoint")


class IterationCheckpoint(L.Callback):
    """Save ``<dirpath>/last.ckpt`` after every iteration (and keep ``iter_<k>.ckpt`` every ``keep_every``).

    Args:
        dirpath: where checkpoints go.
        keep_every: also keep a copy every this many iterations (0: never).
    """

    def __init__(self, dirpath: str | os.PathLike[str], *, keep_every: int = 0) -> None:
        self.dirpath = Path(dirpath)
        self.keep_every = keep_every

    @property
    def last(self) -> Path:
        """The checkpoint to resume from."""
        return self.dirpath / "last.ckpt"

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Mark the iteration completed, then checkpoint atomically."""
        datamodule = trainer.datamodule  # type: ignore[attr-defined]
        datamodule.completed = int(batch.iteration) + 1
        atomic_save_checkpoint(trainer, self.last)
        if self.keep_every and datamodule.completed % self.keep_every == 0:
            atomic_save_checkpoint(trainer, self.dirpath / f"iter_{datamodule.completed:06d}.ckpt")
