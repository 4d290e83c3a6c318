"""What every loop driver shares about the task pool: per-iteration snapshots, resume, and the adaptation hand-off.

One writer owns the pool: global rank 0, chosen once the process group exists (``save_initial_pool`` and
``restore_pool`` run in ``RLAnythingLoop.restore``, after Lightning set the process group up), not guessed from the
launcher's variables when the run is built (``srun`` sets no ``RANK``). After each iteration the drivers gather the
success rates (and whatever the adaptation needs: episodes, critic feedback) from every rank, let the writer plan the
adaptation, spread the task rewrites over all ranks and gather their candidates, let the writer add them and save the
pool, copy the saved state to ``pool/snapshots/iter_<n>.json``, and broadcast the pool's state to the other
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

import torch.distributed as dist

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.files import CorruptFileError
from rlanything_core.loop.adaptation import EnvironmentAdaptation, RewriteRequest

__all__ = ["PoolSnapshots", "dist_rank_world"]

PlanFn = Callable[[dict[str, float], list[Any]], tuple[dict[str, float], list[RewriteRequest]]]


def dist_rank_world() -> tuple[int, int]:
    """``(rank, world size)``; ``(0, 1)`` outside ``torch.distributed``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class PoolSnapshots:
    """Base of the loop drivers: keeps ``self.pool`` in step with the checkpoints.

    Subclasses set ``pool``, ``tasks_per_iteration`` and ``seed``.
    """

    pool: TaskPool
    tasks_per_iteration: int
    seed: int

    def tasks_for(self, iteration: int) -> list[TaskSpec]:
        """The iteration's tasks, identical on every rank: a seeded sample of active tasks, then pending rewrites."""
        return (
            self.pool.sample(self.tasks_per_iteration, seed=self.seed, iteration=iteration) + self.pool.pending_tasks()
        )

    @staticmethod
    def my_groups(num_tasks: int) -> list[int]:
        """This rank's task groups (round-robin by global index); empty when there are more ranks than tasks.

        A rank without a task group rolls out nothing but still takes part in every collective of the iteration (the
        pool sync here, the row deal of ``row_sharding.balance_rows``, the update's padding passes), and trains on its
        share of the other ranks' rows: any number of ranks works.
        """
        rank, world = dist_rank_world()
        return list(range(rank, num_tasks, world))

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
        rank, _ = dist_rank_world()
        if rank == 0:
            self.pool.claim_writer()
        elif self.pool.writer:
            self.pool.close()
            self.pool.writer = False

    def _on_writer_then_share(self, work: Callable[[], object]) -> None:
        """Run ``work`` on the writer (rank 0), then broadcast its pool state (or its error) to every other rank."""
        rank, world = dist_rank_world()
        error: BaseException | None = None
        if rank == 0:
            try:
                work()
            except BaseException as err:  # every rank must reach the broadcast, then raise
                error = err
        if world > 1:
            payload: list[Any] = [None]
            if rank == 0:
                payload[0] = ("error", f"{type(error).__name__}: {error}") if error else ("pool", self.pool.snapshot())
            dist.broadcast_object_list(payload, src=0)
            kind, value = payload[0]
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

    def _sync_pool(
        self,
        rates: dict[str, float],
        items: Sequence[Any],
        iteration: int,
        adaptation: EnvironmentAdaptation | None,
        plan: PlanFn | None,
    ) -> dict[str, float]:
        """Gather ``rates`` and ``items`` from every rank, adapt the pool (rewrites spread over the ranks), save it.

        1. every rank's rates and items are gathered (``all_gather_object``);
        2. the writer runs ``plan`` (resolves pending candidates, lists the rewrite requests) and broadcasts the
           requests;
        3. every rank runs ``adaptation.rewrite`` on its share of the requests (``k % world == rank``: the rewriter's
           LLM calls, which took as long as all of them on rank 0 while the others waited) and all candidates are
           gathered;
        4. the writer adds them in request order (``adaptation.apply``: the one-process result), saves and snapshots
           the pool, and broadcasts its state.

        An error anywhere reaches every rank. Collective.

        Args:
            rates: success rate of each task this rank rolled out.
            items: what ``plan`` needs besides the rates (episodes, feedback records), this rank's share.
            iteration: the iteration (names the snapshot).
            adaptation: the environment adaptation; ``None`` keeps the tasks fixed (``plan`` unused).
            plan: ``(all rates, all items) -> (metrics, requests)``: ``adaptation.plan`` with the driver's arguments.

        Returns:
            The adaptation's metrics plus ``env/accepted_total``.
        """
        self._elect_writer()  # idempotent: a driver used without ``RLAnythingLoop.restore`` still has its writer
        all_items = list(items)
        rank, world = dist_rank_world()
        if world > 1:
            gathered: list[Any] = [None] * world
            dist.all_gather_object(gathered, (rates, all_items))
            rates = {t: r for part in gathered for t, r in part[0].items()}
            all_items = [x for part in gathered for x in part[1]]
        metrics: dict[str, float] = {}
        requests: list[RewriteRequest] = []
        candidates: list[list[Candidate]] = []
        if adaptation is not None and plan is not None:
            planned = self._on_writer_broadcast(lambda: plan(rates, all_items))
            metrics, requests = planned if rank == 0 else ({}, planned[1])
            candidates = _rewrite_sharded(adaptation, requests, rank, world)

        def on_writer() -> None:
            if adaptation is not None and plan is not None:
                metrics.update(adaptation.apply(self.pool, requests, candidates, iteration=iteration, metrics=metrics))
            self.pool.save()
            self._copy_state(self._snapshot_path(iteration))

        self._on_writer_then_share(on_writer)
        metrics["env/accepted_total"] = float(len(self.pool.accepted_ids()))
        return metrics

    @staticmethod
    def _on_writer_broadcast(work: Callable[[], Any]) -> Any:
        """``work()`` on rank 0, its result (or its error) broadcast to every rank."""
        rank, world = dist_rank_world()
        payload: list[Any] = [None]
        error: BaseException | None = None
        if rank == 0:
            try:
                payload[0] = ("ok", work())
            except BaseException as err:  # every rank must reach the broadcast, then raise
                error = err
                payload[0] = ("error", f"{type(err).__name__}: {err}")
        if world > 1:
            dist.broadcast_object_list(payload, src=0)
        if error is not None:
            raise error
        kind, value = payload[0]
        if kind == "error":
            raise RuntimeError(f"the pool writer (rank 0) failed: {value}")
        return value


def _rewrite_sharded(
    adaptation: EnvironmentAdaptation, requests: Sequence[RewriteRequest], rank: int, world: int
) -> list[list[Candidate]]:
    """Every request's candidates, on every rank; each rank rewrites requests ``rank, rank + world, ...``."""
    local: dict[int, Any] = {}
    for k in range(rank, len(requests), world):
        try:
            local[k] = ("ok", adaptation.rewrite(requests[k]))
        except Exception as err:  # every rank must reach the gather, then raise
            local[k] = ("error", f"rank {rank}, request {k} ({requests[k].task.task_id}): {type(err).__name__}: {err}")
            break
    parts: list[Any] = [local]
    if world > 1:
        parts = [None] * world
        dist.all_gather_object(parts, local)
    merged: dict[int, Any] = {k: v for part in parts for k, v in part.items()}
    failures = [value for kind, value in merged.values() if kind == "error"]
    if failures:
        raise RuntimeError(f"rewriting failed: {failures[0]}")
    return [merged[k][1] for k in range(len(requests))]
