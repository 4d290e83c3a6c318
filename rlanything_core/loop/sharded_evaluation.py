"""Evaluation sharded over ranks: every rank plays a share of the episodes, every rank gets all of them back.

``AgentEvaluator`` plays each split's tasks through its collector and has its judge vote on the episodes. Run on
rank 0 alone (the other ranks waiting at a barrier), a full-split evaluation at the paper's scale takes as long as
all ranks' rollouts together. A sharded evaluator (``sharded=True``; ``sharded_evaluator`` makes one) calls
:func:`sharded_collect` and :func:`sharded_judge`, which split the work across the ranks and gather the results on
every rank through the evaluator's ``collectives`` (the loop's runtime), so the evaluator's metrics and its
per-episode outcomes equal a one-process evaluation: the collector seeds rollout ``j`` of group ``g`` at step ``t``
with ``derive_seed(seed, g, j, t)`` and the judge vote ``k`` with ``derive_seed(seed, g, j, t, k)``, independent of
what else is in the batch, and the shards keep each task's group id and each group's rollouts together and in order.

Every rank must call the evaluator (the gathers are collective): ``RLAnythingLoop._scores`` does so when the evaluator
says ``sharded``. With one rank both functions call the collector and the judge directly.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from rlanything_core.collect.agent import AgentCollector, RolloutStats
from rlanything_core.collect.judge import JudgeCollector, JudgeStats, with_votes
from rlanything_core.loop.protocol import Collectives, Evaluator
from rlanything_core.records import Episode, JudgeSample

__all__ = ["sharded_collect", "sharded_evaluator", "sharded_judge"]

E = TypeVar("E", bound=Evaluator)


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


def sharded_collect(
    collector: AgentCollector,
    tasks: Sequence[Any],
    *,
    seed: int,
    collectives: Collectives,
    task_ids: Sequence[str] | None = None,
    group_ids: Sequence[int] | None = None,
) -> tuple[list[Episode], RolloutStats | None]:
    """``collector.collect`` over the ranks: each plays tasks ``k % world == rank``, every rank gets every episode.

    Returns every task's episodes, in task order, on every rank, with the group ids a single process would give;
    the stats are summed over ranks. Collective.
    """
    rank, world = collectives.rank, collectives.world_size
    if world == 1:
        return collector.collect(tasks, seed=seed, task_ids=task_ids, group_ids=group_ids)
    ids = [str(t) for t in tasks] if task_ids is None else list(task_ids)
    groups = list(range(len(tasks))) if group_ids is None else list(group_ids)
    if len(ids) != len(tasks) or len(groups) != len(tasks):
        raise ValueError(f"task_ids, group_ids: expected {len(tasks)} each, got {len(ids)}, {len(groups)}")
    mine = list(range(rank, len(tasks), world))
    episodes: list[Episode] = []
    stats: RolloutStats | None = None
    if mine:  # fewer tasks than ranks: this rank only takes part in the gather
        episodes, stats = collector.collect(
            [tasks[k] for k in mine], seed=seed, task_ids=[ids[k] for k in mine], group_ids=[groups[k] for k in mine]
        )
    runs = collector.group_size
    local = {k: episodes[i * runs : (i + 1) * runs] for i, k in enumerate(mine)}
    parts = collectives.all_gather_object((local, stats))
    by_task: dict[int, list[Episode]] = {}
    for part, _ in parts:
        by_task.update(part)
    return [e for k in range(len(tasks)) for e in by_task[k]], _sum_stats([s for _, s in parts])


def sharded_judge(
    judge: JudgeCollector, episodes: Sequence[Episode], *, seed: int, collectives: Collectives
) -> tuple[list[Episode], JudgeStats | None]:
    """``judge.judge`` over the ranks: each votes on its task groups, every rank gets all the votes.

    Groups go to ranks round-robin in order of first appearance; a group's episodes stay together and in order (the
    vote seeds count a group's rollouts in the order given). Every rank gets judged copies of all the episodes, in
    the order given (the inputs are left unjudged, as with ``JudgeCollector.judge``); the stats are summed over
    ranks. Collective.
    """
    rank, world = collectives.rank, collectives.world_size
    if world == 1:
        return judge.judge(episodes, seed=seed)
    order: dict[int, int] = {}
    for e in episodes:
        order.setdefault(e.group_id, len(order))
    mine = [i for i, e in enumerate(episodes) if order[e.group_id] % world == rank]
    judged: list[Episode] = []
    stats: JudgeStats | None = None
    if mine:  # fewer groups than ranks: this rank only takes part in the gather
        judged, stats = judge.judge([episodes[i] for i in mine], seed=seed)
    # only the votes travel: every rank already holds the episodes, and their prompts dwarf the votes
    votes = {i: [step.judge for step in e.steps] for i, e in zip(mine, judged)}
    parts = collectives.all_gather_object((votes, stats))
    by_index: dict[int, list[list[JudgeSample]]] = {}
    for part, _ in parts:
        by_index.update(part)
    return [with_votes(e, by_index[i]) for i, e in enumerate(episodes)], _sum_stats([s for _, s in parts])


def sharded_evaluator(evaluator: E) -> E:
    """A shallow copy of ``evaluator`` (an ``AgentEvaluator``) with ``sharded = True``.

    Every rank must call the copy (its gathers are collective, through its ``collectives``: ``RLAnythingLoop`` sets
    them to its runtime); each gets the metrics and ``last_outcomes`` of the whole evaluation.
    """
    out = copy.copy(evaluator)
    out.sharded = True
    return out
