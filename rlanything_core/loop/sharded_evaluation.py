"""Evaluation sharded over ranks: every rank plays a share of the episodes, every rank gets all of them back.

``AgentEvaluator`` plays each split's tasks through its collector and has its judge vote on the episodes. Run on
rank 0 alone (the other ranks waiting at a barrier), a full-split evaluation at the paper's scale takes as long as
all ranks' rollouts together. ``sharded_evaluator`` gives the evaluator a collector and a judge that split the work
across the process group and gather the results on every rank (``all_gather_object``), so the evaluator's own code,
its metrics and its per-episode outcomes are unchanged, and equal to a one-process evaluation: the collector seeds
rollout ``j`` of group ``g`` at step ``t`` with ``derive_seed(seed, g, j, t)`` and the judge vote ``k`` with
``derive_seed(seed, g, j, t, k)``, independent of what else is in the batch, and the shards keep each task's group
id and each group's rollouts together and in order.

Every rank must call the evaluator (the gathers are collective): ``RLAnythingLoop._scores`` does so when the evaluator
says ``sharded``. Outside a process group (or with one rank) the wrappers pass straight through.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

import torch.distributed as dist

from rlanything_core.collect.judge import with_votes
from rlanything_core.loop.protocol import Evaluator
from rlanything_core.records import Episode, JudgeSample

__all__ = ["ShardedCollector", "ShardedJudge", "sharded_evaluator"]

E = TypeVar("E", bound=Evaluator)


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _gather(obj: Any, world: int) -> list[Any]:
    parts: list[Any] = [None] * world
    dist.all_gather_object(parts, obj)
    return parts


def _sum_stats(parts: Sequence[Any]) -> Any:
    """Field-wise sum of the ranks' counters (dataclasses of numbers); ranks that did nothing give ``None``."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    first = parts[0]
    if not dataclasses.is_dataclass(first) or isinstance(first, type):
        return first
    totals = {
        f.name: sum(getattr(p, f.name) for p in parts)
        for f in dataclasses.fields(first)
        if all(isinstance(getattr(p, f.name), (int, float)) for p in parts)
    }
    return dataclasses.replace(first, **totals)


class ShardedCollector:
    """An ``AgentCollector`` whose ``collect`` plays this rank's tasks (``k % world == rank``) and gathers them all.

    Returns every task's episodes, in task order, on every rank, with the group ids a single process would give;
    the stats are summed over ranks. Other attributes (``group_size``, ``max_steps``, ...) are the wrapped
    collector's.
    """

    def __init__(self, collector: Any) -> None:
        self.collector = collector

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collector, name)

    def collect(
        self,
        tasks: Sequence[Any],
        *,
        seed: int,
        task_ids: Sequence[str] | None = None,
        group_ids: Sequence[int] | None = None,
    ) -> tuple[list[Episode], Any]:
        """Play this rank's share of ``tasks`` (see ``AgentCollector.collect``) and return everyone's episodes."""
        rank, world = _rank_world()
        if world == 1:
            return self.collector.collect(tasks, seed=seed, task_ids=task_ids, group_ids=group_ids)  # type: ignore[no-any-return]
        ids = [str(t) for t in tasks] if task_ids is None else list(task_ids)
        groups = list(range(len(tasks))) if group_ids is None else list(group_ids)
        if len(ids) != len(tasks) or len(groups) != len(tasks):
            raise ValueError(f"task_ids, group_ids: expected {len(tasks)} each, got {len(ids)}, {len(groups)}")
        mine = list(range(rank, len(tasks), world))
        episodes: list[Episode] = []
        stats: Any = None
        if mine:  # fewer tasks than ranks: this rank only takes part in the gather
            episodes, stats = self.collector.collect(
                [tasks[k] for k in mine], seed=seed, task_ids=[ids[k] for k in mine],
                group_ids=[groups[k] for k in mine],
            )
        runs = self.collector.group_size
        local = {k: episodes[i * runs : (i + 1) * runs] for i, k in enumerate(mine)}
        parts = _gather((local, stats), world)
        by_task: dict[int, list[Episode]] = {}
        for part, _ in parts:
            by_task.update(part)
        return [e for k in range(len(tasks)) for e in by_task[k]], _sum_stats([s for _, s in parts])


class ShardedJudge:
    """A ``JudgeCollector`` whose ``judge`` votes on this rank's task groups and gives every rank all the votes.

    Groups go to ranks round-robin in order of first appearance; a group's episodes stay together and in order (the
    vote seeds count a group's rollouts in the order given). Every rank gets judged copies of all the episodes, in
    the order given (the inputs are left unjudged, as with ``JudgeCollector.judge``); the stats are summed over
    ranks. Other attributes are the wrapped judge's.
    """

    def __init__(self, judge: Any) -> None:
        self.judge_collector = judge

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge_collector, name)

    def judge(self, episodes: Sequence[Episode], *, seed: int) -> tuple[list[Episode], Any]:
        """Vote on this rank's groups (see ``JudgeCollector.judge``); return every episode judged, and the stats."""
        rank, world = _rank_world()
        if world == 1:
            return self.judge_collector.judge(episodes, seed=seed)  # type: ignore[no-any-return]
        order: dict[int, int] = {}
        for e in episodes:
            order.setdefault(e.group_id, len(order))
        mine = [i for i, e in enumerate(episodes) if order[e.group_id] % world == rank]
        judged: list[Episode] = []
        stats: Any = None
        if mine:  # fewer groups than ranks: this rank only takes part in the gather
            judged, stats = self.judge_collector.judge([episodes[i] for i in mine], seed=seed)
        # only the votes travel: every rank already holds the episodes, and their prompts dwarf the votes
        votes = {i: [step.judge for step in e.steps] for i, e in zip(mine, judged)}
        parts = _gather((votes, stats), world)
        by_index: dict[int, list[list[JudgeSample]]] = {}
        for part, _ in parts:
            by_index.update(part)
        return [with_votes(e, by_index[i]) for i, e in enumerate(episodes)], _sum_stats([s for _, s in parts])


def sharded_evaluator(evaluator: E) -> E:
    """A shallow copy of ``evaluator`` (an ``AgentEvaluator``) whose collector and judge are sharded over the ranks.

    The copy has ``sharded = True``: every rank must call it (its gathers are collective); each gets the metrics and
    ``last_outcomes`` of the whole evaluation.
    """
    out = copy.copy(evaluator)
    collector = getattr(out, "collector", None)
    if collector is not None and not isinstance(collector, ShardedCollector):
        out.collector = ShardedCollector(collector)  # type: ignore[attr-defined]
    judge = getattr(out, "judge", None)
    if judge is not None and not isinstance(judge, ShardedJudge):
        out.judge = ShardedJudge(judge)  # type: ignore[attr-defined]
    out.sharded = True
    return out
