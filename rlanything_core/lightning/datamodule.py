"""``RolloutDataModule``: turns each iteration index of the run into ``IterationData``, one per training step.

    IterationStream: start, ..., total - 1 (plain ints) --on_before_batch_transfer: source(iteration) inside the
    module's rollout context--> IterationData --training_step--> the module's updates

Data flows one way: the stream yields the iteration *index*; the data module asks its ``IterationSource`` for that
iteration's rows in ``on_before_batch_transfer`` (Lightning's data-module hook that runs right before the training
step, after Lightning's one-batch prefetch), so the rollouts use the weights *after* the previous update and the
Lightning module never calls down into collection. The data module's ``state_dict`` (saved in every checkpoint) holds
the number of completed iterations and the RNG states; restoring it rolls the task pool back to the snapshot of that
iteration.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.protocol import IterationSource
from rlanything_core.loop.row_sharding import balance_iteration

__all__ = ["IterationStream", "RolloutDataModule"]


class IterationStream(IterableDataset[int]):
    """Iteration indices ``start, start + 1, ..., total - 1``.

    It has no ``__len__``: the stream simply ends (Lightning learns the epoch is over from ``StopIteration``).
    """

    def __init__(self, *, start: int, total: int) -> None:
        super().__init__()
        self.start = start
        self.total = total

    def __iter__(self) -> Iterator[int]:
        yield from range(self.start, self.total)


class RolloutDataModule(L.LightningDataModule):
    """Wraps an ``IterationSource`` (``AgentLoopDriver``, ``CodingLoopDriver``) into Lightning's data API.

    Args:
        driver: ``driver(iteration) -> IterationData``, with ``restore_pool(completed)`` and ``save_initial_pool()``.
        iterations: total number of iterations of the run.
        rollout_context: entered around each collection (every rank); default: the attached Lightning module's
            ``rollout_mode()`` when it has one (models in eval mode, sharded weights gathered, generation engines
            synced), else nothing.
        balance_rows: after the collection, deal the training rows evenly over the ranks
            (``loop.row_sharding.balance_iteration``): rollouts are sharded by task group, rows by count, so ranks
            without a task group (more ranks than tasks) train too. ``False``: each rank trains on its own rows.
    """

    def __init__(
        self,
        driver: IterationSource,
        *,
        iterations: int,
        rollout_context: Callable[[], AbstractContextManager[Any]] | None = None,
        balance_rows: bool = True,
    ) -> None:
        super().__init__()
        if iterations < 1:
            raise ValueError(f"iterations: expected >= 1, got {iterations}")
        if not isinstance(driver, IterationSource):
            raise ValueError(f"driver: expected an IterationSource, got {type(driver).__name__}")
        self.driver = driver
        self.iterations = iterations
        self.rollout_context = rollout_context
        self.balance_rows = balance_rows
        self.completed = 0
        self._restored = False

    def setup(self, stage: str) -> None:
        """On a fresh run, persist the initial pool (the state a resume from iteration 0 returns to)."""
        if not self._restored and self.completed == 0:
            self.driver.save_initial_pool()

    def train_dataloader(self) -> DataLoader[int]:
        """The next iteration not yet completed, as a one-batch epoch.

        One iteration is one Lightning epoch (run the trainer with ``max_epochs=iterations`` and
        ``reload_dataloaders_every_n_epochs=1``): Lightning's own epoch counter then only schedules, and this module's
        ``completed`` (saved in every checkpoint) alone decides which iteration comes next after a resume.
        """
        start = min(self.completed, self.iterations)
        stream = IterationStream(start=start, total=min(start + 1, self.iterations))
        return DataLoader(stream, batch_size=None, num_workers=0, collate_fn=lambda x: x)

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> IterationData:
        """Iteration index -> ``IterationData``: collect now, with the current weights, in the rollout context."""
        with self._rollout_context():  # every rank: ranks run different numbers of forwards, with no collective
            data = self.driver(int(batch))
        return balance_iteration(data) if self.balance_rows else data

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        """Unchanged: the module moves each micro-batch of rows to its device itself."""
        return batch

    def _rollout_context(self) -> AbstractContextManager[Any]:
        if self.rollout_context is not None:
            return self.rollout_context()
        trainer = self.trainer
        rollout_mode = getattr(trainer.lightning_module, "rollout_mode", None) if trainer is not None else None
        return rollout_mode() if callable(rollout_mode) else nullcontext()

    def state_dict(self) -> dict[str, Any]:
        """Completed iterations and RNG states (saved inside each checkpoint)."""
        kind, keys, pos, has_gauss, gauss = np.random.get_state()  # plain types: checkpoints load with weights_only
        return {
            "completed": self.completed,
            "python_rng": random.getstate(),
            "numpy_rng": (str(kind), torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss),
                          float(gauss)),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the counters and RNG states; roll the task pool back to this checkpoint's snapshot."""
        self.completed = int(state_dict["completed"])
        random.setstate(state_dict["python_rng"])
        kind, keys, pos, has_gauss, gauss = state_dict["numpy_rng"]
        np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
        torch.set_rng_state(state_dict["torch_rng"])
        self.driver.restore_pool(self.completed)
        self._restored = True
