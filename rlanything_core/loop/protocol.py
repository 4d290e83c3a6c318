"""``IterationSource``: the one contract every setting's driver implements (agent, coding, GUI).

    iteration index --source(iteration)--> IterationData (policy rows and judge rows with final advantages,
                                           metrics, pool events as ``env/*`` metrics)

The Lightning data module turns each iteration index of the run into ``IterationData`` with it, right before the
training step (so rollouts use the weights after the previous update); the module only consumes the rows. The pool
methods keep the task pool in step with the checkpoints (a resume rolls it back to the checkpoint's iteration).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rlanything_core.loop.iteration import IterationData

__all__ = ["IterationSource"]


@runtime_checkable
class IterationSource(Protocol):
    """Turns an iteration index into typed iteration data; keeps its task pool resumable.

    Implemented by ``AgentLoopDriver`` (ALFWorld, TextWorld and the GUI settings) and ``CodingLoopDriver``.
    """

    def __call__(self, iteration: int, /) -> IterationData:
        """Collect, reward and build iteration ``iteration``'s rows with the current weights; update the pool."""
        ...

    def save_initial_pool(self) -> None:
        """Persist the pool before any iteration (what a resume from iteration 0 returns to)."""
        ...

    def restore_pool(self, completed: int, /) -> None:
        """Roll the pool back to its state after ``completed`` iterations."""
        ...
