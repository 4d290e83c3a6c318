"""What every loop driver shares about the task pool: per-iteration snapshots, resume, and the adaptation hand-off.

One writer owns the pool: global rank 0, chosen once the process group exists (``save_initial_pool`` and
``restore_pool`` run in ``RLAnythingLoop.restore``, after Lightning set the process group up), not guessed from the
launcher's variables when the run is built (``srun`` sets no ``RANK``). After each iteration the loop calls three
stages on each rank's ``Outcomes`` (success rates, and what the critic reads: episodes or the setting's feedback):
``plan`` gathers them from every rank and lets the writer plan the adaptation, ``rewrite`` spreads the task rewrites
over all ranks and gathers their candidates, ``apply`` lets the writer add them and save the pool, copy the saved
state to ``pool/snapshots/iter_<n>.json``, and broadcast the pool's state to the other
ranks (``broadcast_object_list``): no rank re-reads shared storage, which NFS may serve stale. An error on the writer
is broadcast too, so every rank raises it instead of waiting. A resumed run rolls the pool back to the snapshot of its
checkpoint's iteration, so a crash between the two saves repeats that iteration exactly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.files import CorruptFileError
from rlanything_core.loop.adaptation import EnvironmentAdaptation, RewriteRequest
from rlanything_core.loop.protocol import SINGLE_PROCESS, AdaptationPlan, Collectives, Outcomes
from rlanything_core.seeding import derive_seed

__all__ = ["PoolSnapshots"]

class PoolSnapshots:
    """Base of the loop drivers: keeps ``self.pool`` in step with the checkpoints.

    Subclasses set ``pool``, ``tasks_per_iteration``, ``seed`` and ``adaptation`` (``None``: the tasks stay fixed), and
    give their rollouts' ``Outcomes``; ``plan``, ``rewrite`` and ``apply`` are the loop's adaptation stages. Every
    rank and collective is ``collectives``'s
    (``RLAnythingLoop`` sets it to its runtime; one process by default).
    """

    pool: TaskPool
    tasks_per_iteration: int
    seed: int
    adaptation: EnvironmentAdaptation | None
    collectives: Collectives = SINGLE_PROCESS

    def tasks_for(self, iteration: int) -> list[TaskSpec]:
        """The iteration's tasks, identical on every rank: a seeded sample of active tasks, then pending rewrites."""
        return (
            self.pool.sample(self.tasks_per_iteration, seed=self.seed, iteration=iteration) + self.pool.pending_tasks()
        )

    def my_groups(self, num_tasks: int) -> list[int]:
        """This rank's task groups (round-robin by global index); empty when there are more ranks than tasks.

        A rank without a task group rolls out nothing but still takes part in every collective of the iteration (the
        pool sync here, the row deal of ``row_sharding.balance_rows``, the update's padding passes), and trains on its
        share of the other ranks' rows: any number of ranks works.
        """
        return list(range(self.collectives.rank, num_tasks, self.collectives.world_size))

    def _snapshot_path(self, iteration: int) -> Path:
        return self.pool.run_dir / "pool" / "snapshots" / f"iter_{iteration:06d}.json"

    def restore_pool(self, completed_iterations: int) -> None:
        """Roll the pool back to the state that follows iteration ``completed_iterations - 1`` (for resume).

        A crash between saving a pool snapshot and saving the matching checkpoint leaves the pool one iteration
        ahead; the resumed run repeats that iteration exactly, from the snapshot the checkpoint belongs to. Collective:
        the writer restores, every other rank receives its state.
        """
        self._elect_writer()
        self._on_writer_then_share(lambda: self._restore_on_writer(completed_iterations))

    def _restore_on_writer(self, completed_iterations: int) -> None:
        if completed_iterations > 0:
            snapshot = self._snapshot_path(completed_iterations - 1)
            if not snapshot.is_file():
                raise CorruptFileError(f"{snapshot}: the pool snapshot of the checkpoint's iteration is missing; "
                                       "restore it from a backup, or start again in a new run_dir")
            initial = snapshot
        else:
            initial = self.pool.run_dir / "pool" / "snapshots" / "initial.json"
        if initial.is_file():  # validated before it replaces state.json (TaskPool.restore)
            self.pool = self.pool.restore(initial)
            return
        self.pool.close()
        self.pool = TaskPool.load(self.pool.run_dir, writer=True)

    def save_initial_pool(self) -> None:
        """Persist the pool as it is before iteration 0 (the state a resume from scratch returns to).

        A run restarted before its first checkpoint already has that state: it returns to it instead, in memory only
        (``RLAnythingLoop.restore`` calls this before Lightning loads a checkpoint, whose ``restore_pool`` then replaces
        it; writing it would have overwritten the saved state even where that restore then fails on a corrupt
        snapshot). Collective.
        """
        self._elect_writer()

        def on_writer() -> None:
            initial = self.pool.run_dir / "pool" / "snapshots" / "initial.json"
            if initial.is_file():
                self.pool = self.pool.restore(initial, persist=False)
                return
            self.pool.save()
            self._copy_state(self.pool.run_dir / "pool" / "snapshots" / "initial.json")

        self._on_writer_then_share(on_writer)

    def _elect_writer(self) -> None:
        """Global rank 0 becomes the writer (takes the lock); any other rank gives the role up."""
        if self.collectives.rank == 0:
            self.pool.claim_writer()
        elif self.pool.writer:
            self.pool.close()
            self.pool.writer = False

    def _on_writer_then_share(self, work: Callable[[], object]) -> None:
        """Run ``work`` on the writer (rank 0), then broadcast its pool state (or its error) to every other rank."""
        rank, world = self.collectives.rank, self.collectives.world_size
        error: BaseException | None = None
        if rank == 0:
            try:
                work()
            except BaseException as err:  # every rank must reach the broadcast, then raise
                error = err
        if world > 1:
            payload: Any = None
            if rank == 0:
                payload = ("error", f"{type(error).__name__}: {error}") if error else ("pool", self.pool.snapshot())
            kind, value = self.collectives.broadcast(payload, 0)
            if rank != 0:
                if kind == "error":
                    raise RuntimeError(f"the pool writer (rank 0) failed: {value}")
                self.pool.close()
                self.pool = TaskPool.from_snapshot(self.pool.run_dir, value)
        if error is not None:
            raise error

    def _copy_state(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        shutil.copyfile(self.pool.run_dir / "pool" / "state.json", tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)

    # ------------------------------------------------------------------ adaptation: plan, rewrite, apply
    def plan(self, outcomes: Outcomes, /) -> AdaptationPlan:
        """Every rank's outcomes gathered; the writer plans the adaptation and broadcasts its rewrite requests.

        The writer's ``adaptation.plan`` resolves last iteration's candidates from the gathered success rates and
        lists this iteration's rewrite requests (with the critic feedback of the gathered episodes, or the setting's
        own ``outcomes.feedback``). Without an adaptation nothing is gathered and no request is made. An error on the
        writer reaches every rank. Collective.
        """
        self._elect_writer()  # idempotent: a driver used without ``RLAnythingLoop.restore`` still has its writer
        adaptation = self.adaptation
        iteration = outcomes.iteration
        if adaptation is None:
            return AdaptationPlan(iteration, {}, [])
        gathered = (
            self.collectives.all_gather_object(outcomes) if self.collectives.world_size > 1 else [outcomes]
        )
        rates = {t: r for part in gathered for t, r in part.rates.items()}
        episodes = [e for part in gathered for e in part.episodes]
        feedback = (
            None if outcomes.feedback is None else {f.task_id: f for part in gathered for f in part.feedback or []}
        )
        seed = derive_seed(self.seed, iteration, "env")

        def on_writer() -> tuple[dict[str, float], list[RewriteRequest]]:
            return adaptation.plan(self.pool, episodes, rates, iteration=iteration, seed=seed, feedback=feedback)

        metrics, requests = self._on_writer_broadcast(on_writer)
        return AdaptationPlan(iteration, metrics if self.collectives.rank == 0 else {}, list(requests))

    def rewrite(self, plan: AdaptationPlan, /) -> list[list[Candidate]]:
        """Every request's candidates, on every rank; collective.

        Each rank rewrites requests ``k % world == rank`` (the rewriter's LLM calls, which took as long as all of them
        on rank 0 while the others waited), then all are gathered.
        """
        if self.adaptation is None:
            return []
        return _rewrite_sharded(self.adaptation, plan.requests, self.collectives)

    def apply(self, plan: AdaptationPlan, candidates: list[list[Candidate]], /) -> dict[str, float]:
        """The writer adds the candidates and saves the pool; the ``env/*`` metrics; collective.

        The writer adds them in request order (the one-process result), saves and snapshots the pool, and shares its
        state with every rank. Returns the adaptation's metrics plus ``env/accepted_total``.
        """
        metrics = dict(plan.metrics)
        adaptation = self.adaptation

        def on_writer() -> None:
            if adaptation is not None:
                metrics.update(adaptation.apply(self.pool, plan.requests, candidates, iteration=plan.iteration,
                                                metrics=metrics))  # fmt: skip
            self.pool.save()
            self._copy_state(self._snapshot_path(plan.iteration))

        self._on_writer_then_share(on_writer)
        metrics["env/accepted_total"] = float(len(self.pool.accepted_ids()))
        return metrics

    def _on_writer_broadcast(self, work: Callable[[], Any]) -> Any:
        """``work()`` on rank 0, its result (or its error) broadcast to every rank."""
        rank = self.collectives.rank
        payload: Any = None
        error: BaseException | None = None
        if rank == 0:
            try:
                payload = ("ok", work())
            except BaseException as err:  # every rank must reach the broadcast, then raise
                error = err
                payload = ("error", f"{type(err).__name__}: {err}")
        if self.collectives.world_size > 1:
            payload = self.collectives.broadcast(payload, 0)
        if error is not None:
            raise error
        kind, value = payload
        if kind == "error":
            raise RuntimeError(f"the pool writer (rank 0) failed: {value}")
        return value


def _rewrite_sharded(
    adaptation: EnvironmentAdaptation, requests: Sequence[RewriteRequest], collectives: Collectives
) -> list[list[Candidate]]:
    """Every request's candidates, on every rank; each rank rewrites requests ``rank, rank + world, ...``."""
    rank, world = collectives.rank, collectives.world_size
    local: dict[int, Any] = {}
    for k in range(rank, len(requests), world):
        try:
            local[k] = ("ok", adaptation.rewrite(requests[k]))
        except Exception as err:  # every rank must reach the gather, then raise
            local[k] = ("error", f"rank {rank}, request {k} ({requests[k].task.task_id}): {type(err).__name__}: {err}")
            break
    parts: list[Any] = collectives.all_gather_object(local) if world > 1 else [local]
    merged: dict[int, Any] = {k: v for part in parts for k, v in part.items()}
    failures = [value for kind, value in merged.values() if kind == "error"]
    if failures:
        raise RuntimeError(f"rewriting failed: {failures[0]}")
    return [merged[k][1] for k in range(len(requests))]
