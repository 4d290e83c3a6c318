"""``IterationSource`` and ``Evaluator``: the contracts every setting's driver and evaluator implement.

    iteration index --source(iteration)--> IterationData (policy rows and judge rows with final advantages,
                                           metrics, pool events as ``env/*`` metrics)

The Lightning data module turns each iteration index of the run into ``IterationData`` with it, right before the
training step (so rollouts use the weights after the previous update); the module only consumes the rows. The pool
methods keep the task pool in step with the checkpoints (a resume rolls it back to the checkpoint's iteration).

    evaluator() --> {metric name: value}   (held-out tasks, the current weights; ``sharded``: every rank calls it)

The Lightning module calls its evaluator between updates, and only through this contract; an evaluator that can also
score the judge alone, cheaply, is a ``JudgeAccuracyEvaluator``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rlanything_core.loop.iteration import IterationData

__all__ = ["Evaluator", "IterationSource", "JudgeAccuracyEvaluator"]


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


@runtime_checkable
class Evaluator(Protocol):
    """Scores the current models on held-out tasks.

    Implemented by ``AgentEvaluator`` (ALFWorld, TextWorld and the GUI settings) and ``CodingEvaluator``.

    Attributes:
        sharded: the evaluation is collective (``loop.sharded_evaluation``): every rank must call it, and each gets
            the whole result. ``False``: rank 0 alone calls it while the others wait.
    """

    sharded: bool

    def __call__(self) -> dict[str, float]:
        """Evaluate the models as they are now; metric names without the ``eval/`` prefix."""
        ...


@runtime_checkable
class JudgeAccuracyEvaluator(Evaluator, Protocol):
    """An ``Evaluator`` that can also score only the judge, far cheaper than a full evaluation (``AgentEvaluator``)."""

    def judge_accuracy(self) -> dict[str, float]:
        """The judge's metrics alone (no policy rollouts); empty when there is nothing to score it on."""
        ...
