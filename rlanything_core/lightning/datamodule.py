"""``RolloutDataModule``: serves one lazily collected iteration per training step, resumably.

Lightning prefetches one batch ahead; rollouts must use the weights *after* the previous update, so the stream yields
``PendingIteration`` handles and the module collects when it is about to train on them. The data module's
``state_dict`` (saved in every checkpoint) holds the number of completed iterations and the RNG states; restoring it
rolls the task pool back to the snapshot of that iteration.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from rlanything_core.loop.iteration import IterationData

__all__ = ["IterationStream", "PendingIteration", "RolloutDataModule"]


class PendingIteration:
    """A handle on iteration ``iteration``; ``collect()`` runs the rollouts now.

    A plain class (not a dataclass): Lightning's batch transfer walks dataclasses and would try to rebuild it.
    """

    __slots__ = ("iteration", "produce")

    def __init__(self, iteration: int, produce: Callable[[int], IterationData]) -> None:
        self.iteration = iteration
        self.produce = produce

    def collect(self) -> IterationData:
        """Collect the iteration's data with the current weights."""
        return self.produce(self.iteration)


class IterationStream(IterableDataset[PendingIteration]):
    """Iterations ``start, start + 1, ..., total - 1`` as ``PendingIteration`` handles.

    It has no ``__len__``: the stream simply ends (Lightning learns the epoch is over from ``StopIteration``).
    """

    def __init__(self, produce: Callable[[int], IterationData], *, start: int, total: int) -> None:
        super().__init__()
        self.produce = produce
        self.start = start
        self.total = total

    def __iter__(self) -> Iterator[PendingIteration]:
        for iteration in range(self.start, self.total):
            yield PendingIteration(iteration, self.produce)



class RolloutDataModule(L.LightningDataModule):
    """Wraps a driver (``AgentLoopDriver`` or ``CodingLoopDriver``) into Lightning's data API.

    Args:
        driver: ``driver(iteration) -> IterationData``; with ``restore_pool(completed)`` and ``save_initial_pool()``.
        iterations: total number of iterations of the run.
    """

    def __init__(self, driver: Any, *, iterations: int) -> None:
        super().__init__()
        if iterations < 1:
            raise ValueError(f"iterations: expected >= 1, got {iterations}")
        self.driver = driver
        self.iterations = iterations
        self.completed = 0
        self._restored = False

    def setup(self, stage: str) -> None:
        """On a fresh run, persist the initial pool (the state a resume from iteration 0 returns to)."""
        if not self._restored and self.completed == 0:
            self.driver.save_initial_pool()

    def train_dataloader(self) -> DataLoader[PendingIteration]:
        """The next iteration not yet completed, as a one-batch epoch.

        One iteration is one Lightning epoch (run the trainer with ``max_epochs=iterations`` and
        ``reload_dataloaders_every_n_epochs=1``): Lightning's own epoch counter then only schedules, and this module's
        ``completed`` (saved in every checkpoint) alone decides which iteration comes next after a resume.
        """
        start = min(self.completed, self.iterations)
        stream = IterationStream(self.driver, start=start, total=min(start + 1, self.iterations))
        return DataLoader(stream, batch_size=None, num_workers=0, collate_fn=lambda x: x)

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
