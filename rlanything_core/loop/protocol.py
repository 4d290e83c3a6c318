"""The contracts the loop (``loop/rlanything_loop.py``) calls: the data side, the evaluation, the update, the runtime.

    collect(i) -> Rollouts --judge--> Rollouts --rows--> IterationData (rows with final advantages, metrics)
                                               --adapt--> env/* metrics (success rates to the pool, rewrites)

``IterationSource`` is the data side of one iteration, in the order the loop calls it (the order every driver ran its
stages in before they were split, so the weights stay bit-identical); its pool methods keep the task pool in step
with the checkpoints (a resume rolls it back to the checkpoint's iteration).

    evaluator() --> {metric name: value}   (held-out tasks, the current weights; ``sharded``: every rank calls it)

``ModelUpdate`` (``training/update.py``) is an ``Update``; ``Runtime`` is what the loop needs of devices, processes
and files, implemented over Lightning Fabric by ``lightning/fabric_runtime.py`` (the loop imports no Lightning).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from rlanything_core.loop.iteration import IterationData, empty_iteration
from rlanything_core.types import TrainingRows

__all__ = [
    "Evaluator",
    "IterationSource",
    "JudgeAccuracyEvaluator",
    "Rollouts",
    "Runtime",
    "Update",
    "source_iteration",
]


@dataclass
class Rollouts:
    """One rank's rollouts of one iteration, between the source's stages.

    Attributes:
        iteration: the iteration number (0-based).
        episodes: this rank's share (agent ``Episode`` records; for coding, what the coding driver needs); empty on
            a rank without a task group.
        metrics: scalars to log (parse failures, timings), merged into the iteration's metrics by ``rows``.
    """

    iteration: int
    episodes: list[Any]
    metrics: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class IterationSource(Protocol):
    """The data side of an iteration, in stages; keeps its task pool resumable.

    Implemented by ``AgentLoopDriver`` (ALFWorld, TextWorld and the GUI settings) and ``CodingLoopDriver``. A rank
    with no task group returns ``Rollouts(i, [])`` from ``collect``; the caller (``RLAnythingLoop.run``,
    :func:`source_iteration`) then asks for no rows (``empty_iteration(i)``) and still calls ``adapt`` (the pool sync
    is collective). The caller adds the rollouts' metrics to the rows' metrics.
    """

    def collect(self, iteration: int, /) -> Rollouts:
        """This rank's rollouts of iteration ``iteration`` with the current weights."""
        ...

    def judge(self, rollouts: Rollouts, /) -> Rollouts:
        """The judge's votes (agent) or unit tests (coding); unchanged without a judge."""
        ...

    def rows(self, rollouts: Rollouts, /) -> IterationData:
        """Score the rollouts (step reward, advantages, judge targets, bands) and build the training rows.

        Called only with rollouts (a rank without any gets ``empty_iteration``); its metrics are the rows' own.
        """
        ...

    def adapt(self, rollouts: Rollouts, /) -> dict[str, float]:
        """Success rates to the pool (every rank: a collective), environment adaptation on the writer rank.

        Returns the ``env/*`` metrics and the timings.
        """
        ...

    def save_initial_pool(self) -> None:
        """Persist the pool before any iteration (what a resume from iteration 0 returns to)."""
        ...

    def restore_pool(self, completed: int, /) -> None:
        """Roll the pool back to its state after ``completed`` iterations."""
        ...


def source_iteration(source: IterationSource, iteration: int) -> IterationData:
    """One iteration's data side outside the loop (tests, notebooks): the stages in ``RLAnythingLoop.run``'s order.

    No rollout context is entered (the caller's models are used as they are) and the rows are not balanced over
    ranks.
    """
    rollouts = source.judge(source.collect(iteration))
    data = source.rows(rollouts) if rollouts.episodes else empty_iteration(iteration)  # a rank without tasks
    data.metrics.update({**rollouts.metrics, **source.adapt(rollouts)})
    return data


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


@runtime_checkable
class Update(Protocol):
    """One model's update of an iteration (``training.update.ModelUpdate``).

    Attributes:
        name: the metric prefix (``policy``, ``judge``).
        model: the model it trains.
        optimizer: its optimizer, once ``setup`` ran (saved in every checkpoint).
    """

    name: str
    model: nn.Module
    optimizer: Any

    def setup(self) -> None:
        """Build the optimizer (after the runtime placed or sharded the model)."""
        ...

    def __call__(self, rows: TrainingRows | None, /) -> dict[str, float]:
        """Train on this rank's ``rows`` (possibly none; collective); the update's metrics."""
        ...


@runtime_checkable
class Runtime(Protocol):
    """Devices, processes, precision, checkpoint files and logs: what the loop and the updates need of them.

    ``lightning.fabric_runtime.FabricRuntime`` implements it over Lightning Fabric (single device, DDP, FSDP2).
    """

    @property
    def device(self) -> torch.device:
        """This process's device."""
        ...

    @property
    def rank(self) -> int:
        """The global rank."""
        ...

    @property
    def world_size(self) -> int:
        """The number of processes."""
        ...

    def launch(self) -> None:
        """Start the other processes (if any) and the process group; idempotent."""
        ...

    def setup_models(self, models: nn.Module) -> None:
        """Place (or shard) ``models`` in place on every rank, with rank 0's weights everywhere. Collective."""
        ...

    def setup_optimizer(self, optimizer: torch.optim.Optimizer) -> Any:
        """``optimizer`` ready to step under the runtime's precision."""
        ...

    def rollout_context(self, *models: nn.Module | None) -> AbstractContextManager[Any]:
        """Entered on every rank around rollouts and evaluations: the models' full weights (collective entry)."""
        ...

    def autocast(self) -> AbstractContextManager[Any]:
        """The precision's compute context around the update's forwards."""
        ...

    def backward(self, loss: Tensor) -> None:
        """Backpropagate ``loss`` (scaled as the precision needs)."""
        ...

    def all_reduce(self, values: list[float], op: str = "sum") -> list[float]:
        """``values`` reduced over the ranks (``sum`` or ``max``); collective."""
        ...

    def all_reduce_tensors(self, tensors: list[Tensor]) -> None:
        """Sum each of ``tensors`` over the ranks, in place; collective."""
        ...

    def barrier(self, name: str) -> None:
        """Wait for every rank."""
        ...

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s ``obj`` on every rank."""
        ...

    def resume_path(self, path: str | os.PathLike[str]) -> Any:
        """``path`` when a complete checkpoint is there, else ``None`` (raises on a damaged one)."""
        ...

    def save(self, path: str | os.PathLike[str], state: dict[str, Any]) -> None:
        """Save ``state`` (modules, optimizers, plain values) to ``path`` atomically. Collective."""
        ...

    def load(self, path: str | os.PathLike[str], state: dict[str, Any]) -> dict[str, Any]:
        """Load ``path`` into ``state``'s modules and optimizers in place; the checkpoint's other entries."""
        ...

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Log ``metrics`` (rank 0's loggers)."""
        ...

    def flush_logs(self) -> None:
        """Write the loggers' buffered rows."""
        ...

