"""The contracts the loop (``loop/rlanything_loop.py``) calls: the data side, the evaluation, the update, the runtime.

    collect(i) -> Rollouts --judge--> Rollouts --rows--> IterationData (rows with final advantages, metrics)
                                      --outcomes--> Outcomes --plan--> AdaptationPlan --rewrite--> candidates
                                      --apply--> env/* metrics (the pool saved, its snapshot shared)

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
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import torch
from torch import Tensor, nn

from rlanything_core.adaptation.feedback import TaskFeedback
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate
from rlanything_core.loop.adaptation import RewriteRequest
from rlanything_core.loop.iteration import IterationData, empty_iteration
from rlanything_core.records import Episode
from rlanything_core.types import TrainingRows

__all__ = [
    "SINGLE_PROCESS",
    "AdaptationPlan",
    "Collectives",
    "EpisodeT",
    "Evaluator",
    "IterationSource",
    "JudgeAccuracyEvaluator",
    "Outcomes",
    "Rollouts",
    "Runtime",
    "ShardedEvaluator",
    "SingleProcess",
    "Update",
    "source_iteration",
]


@runtime_checkable
class Collectives(Protocol):
    """The ranks and the object collectives the data side needs (the pool sync, the row deal, sharded evaluation).

    Every collective of the loop goes through one of these: the ``Runtime`` (``lightning/fabric_runtime.py``) is one,
    :class:`SingleProcess` is the one-process default of a driver or an evaluator used outside the loop, and
    ``lightning.process_group.ProcessGroup`` serves a process group started by hand (tests).
    """

    @property
    def rank(self) -> int:
        """The global rank."""
        ...

    @property
    def world_size(self) -> int:
        """The number of processes."""
        ...

    def all_gather_object(self, obj: Any, /) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank; collective."""
        ...

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s ``obj`` on every rank; collective."""
        ...

    def scatter_object(self, objs: list[Any] | None, src: int) -> Any:
        """Rank ``src``'s ``objs[rank]`` on each rank (``objs``: one per rank on ``src``, ignored elsewhere)."""
        ...


class SingleProcess:
    """:class:`Collectives` of one process: rank 0 of 1, every collective the identity."""

    @property
    def rank(self) -> int:
        """Always 0."""
        return 0

    @property
    def world_size(self) -> int:
        """Always 1."""
        return 1

    def all_gather_object(self, obj: Any, /) -> list[Any]:
        """``[obj]``."""
        return [obj]

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """``obj``."""
        return obj

    def scatter_object(self, objs: list[Any] | None, src: int) -> Any:
        """``objs[0]``."""
        if objs is None or len(objs) != 1:
            raise ValueError(f"objs: expected one object (one process), got {objs!r}")
        return objs[0]


SINGLE_PROCESS = SingleProcess()
"""The shared one-process :class:`Collectives` (it holds no state)."""


EpisodeT = TypeVar("EpisodeT")
"""What a setting's rollouts are made of: ``records.Episode`` (agent settings), ``loop.coding_rows.TaskRollouts``."""


@dataclass
class Rollouts(Generic[EpisodeT]):
    """One rank's rollouts of one iteration, between the source's stages.

    Attributes:
        iteration: the iteration number (0-based).
        episodes: this rank's share (agent ``Episode`` records; for coding, ``TaskRollouts``: a task and its
            programs); empty on a rank without a task group.
        metrics: scalars to log (parse failures, timings), merged into the iteration's metrics by ``rows``.
    """

    iteration: int
    episodes: list[EpisodeT]
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class Outcomes:
    """What this rank's rollouts tell the adaptation: success rates and what the critic reads.

    Attributes:
        iteration: the iteration (names the pool snapshot, seeds the plan).
        rates: success rate (coding: pass-all rate) of each task this rank rolled out.
        episodes: this rank's episodes, from which the critic feedback is built (agent settings); empty otherwise.
        feedback: the setting's own critic feedback (coding: per-test pass rates), or ``None``: built from
            ``episodes``.
    """

    iteration: int
    rates: dict[str, float]
    episodes: list[Episode] = field(default_factory=list)
    feedback: list[TaskFeedback] | None = None


@dataclass
class AdaptationPlan:
    """The writer's plan of one iteration's adaptation, on every rank.

    Attributes:
        iteration: the iteration.
        metrics: the plan's ``env/*`` metrics (the writer's; empty on the other ranks).
        requests: the rewrite requests, in the order their candidates are added.
    """

    iteration: int
    metrics: dict[str, float]
    requests: list[RewriteRequest]


@runtime_checkable
class IterationSource(Protocol[EpisodeT]):
    """The data side of an iteration, in stages; keeps its task pool resumable.

    Implemented by ``AgentLoopDriver`` (ALFWorld, TextWorld and the GUI settings) and ``CodingLoopDriver``. A rank
    with no task group returns ``Rollouts(i, [])`` from ``collect``; the caller (``RLAnythingLoop.run``,
    :func:`source_iteration`) then asks for no rows (``empty_iteration(i)``) and still calls ``plan``, ``rewrite`` and
    ``apply`` (the pool sync is collective). ``loop.pool_sync.PoolSnapshots`` gives the last three. The caller adds the
    rollouts' metrics to the rows' metrics.

    Attributes:
        pool: the task pool (its writer is global rank 0).
        collectives: the ranks and collectives its stages use (the pool sync, the rank's task groups);
            ``RLAnythingLoop`` sets it to its runtime, outside the loop it is ``SINGLE_PROCESS`` by default.
    """

    pool: TaskPool
    collectives: Collectives

    def collect(self, iteration: int, /) -> Rollouts[EpisodeT]:
        """This rank's rollouts of iteration ``iteration`` with the current weights."""
        ...

    def judge(self, rollouts: Rollouts[EpisodeT], /) -> Rollouts[EpisodeT]:
        """The judge's votes (agent) or unit tests (coding); unchanged without a judge."""
        ...

    def rows(self, rollouts: Rollouts[EpisodeT], /) -> IterationData:
        """Score the rollouts (step reward, advantages, judge targets, bands) and build the training rows.

        Called only with rollouts (a rank without any gets ``empty_iteration``); its metrics are the rows' own.
        """
        ...

    def outcomes(self, rollouts: Rollouts[EpisodeT], /) -> Outcomes:
        """This rank's success rates and what the critic reads (episodes, or the setting's own feedback)."""
        ...

    def plan(self, outcomes: Outcomes, /) -> AdaptationPlan:
        """Every rank's outcomes to the pool's writer, which plans the adaptation; its requests on every rank.

        Collective (every rank, with or without rollouts).
        """
        ...

    def rewrite(self, plan: AdaptationPlan, /) -> list[list[Candidate]]:
        """Every request's candidate rewrites, the requests spread over the ranks; collective."""
        ...

    def apply(self, plan: AdaptationPlan, candidates: list[list[Candidate]], /) -> dict[str, float]:
        """The writer adds the candidates and saves the pool's snapshot, shared with every rank; ``env/*`` metrics.

        Collective.
        """
        ...

    def save_initial_pool(self) -> None:
        """Persist the pool before any iteration (what a resume from iteration 0 returns to)."""
        ...

    def restore_pool(self, completed: int, /) -> None:
        """Roll the pool back to its state after ``completed`` iterations."""
        ...


def source_iteration(source: IterationSource[Any], iteration: int) -> IterationData:
    """One iteration's data side outside the loop (tests, notebooks): the data stages of ``RLAnythingLoop.run``.

    No rollout context is entered (the caller's models are used as they are) and the rows are not balanced over
    ranks.
    """
    rollouts = source.judge(source.collect(iteration))
    data = source.rows(rollouts) if rollouts.episodes else empty_iteration(iteration)  # a rank without tasks
    plan = source.plan(source.outcomes(rollouts))
    data.metrics.update({**rollouts.metrics, **source.apply(plan, source.rewrite(plan))})
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
class ShardedEvaluator(Evaluator, Protocol):
    """An ``Evaluator`` that splits its work over the ranks (``sharded`` true) through its ``collectives``.

    ``RLAnythingLoop`` sets ``collectives`` to its runtime; outside the loop it is ``SINGLE_PROCESS`` unless the
    caller sets it (a process group started by hand: ``lightning.process_group.ProcessGroup``).
    """

    collectives: Collectives


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

    A ``Runtime`` is also the run's :class:`Collectives`: the loop hands it to its source and a sharded evaluator.

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

    def all_gather_object(self, obj: Any, /) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank; collective (``Collectives``)."""
        ...

    def scatter_object(self, objs: list[Any] | None, src: int) -> Any:
        """Rank ``src``'s ``objs[rank]`` on each rank; collective (``Collectives``)."""
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

