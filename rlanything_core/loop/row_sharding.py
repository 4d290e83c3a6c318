"""Training rows dealt over the ranks independently of who rolled them out, so any number of ranks works.

Rollouts are sharded by task group (a group's rollouts must stay on one rank: its advantages are normalized over the
group); training rows, which leave ``build_iteration`` with their final advantages, need not be. With fewer task
groups than ranks (``scale=multinode``: 16 groups over 64 ranks) most ranks roll out nothing, and with uneven groups
(band filtering, different episode lengths) ranks hold very different numbers of rows; the update then takes as long
as the busiest rank (every FSDP forward and backward is a collective: the others run zero-weight padding passes).

``balance_rows`` re-deals the rows: every rank learns every rank's row lengths (one small ``all_gather_object``),
computes the same assignment (rows sorted by task group then length, dealt round-robin: each group, hence each of the
module's ``group % updates`` minibatches, is spread over all ranks), then each rank that holds rows scatters them to
their new owners (``scatter_object_list``, one call per rank holding rows: each row travels once). The update is
unchanged: losses are normalized by the global token/sequence counts and gradients are summed over ranks, so the
result equals the single-process update whatever rank holds a row (up to float summation order).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import Tensor

from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.protocol import Collectives
from rlanything_core.types import TokenRows, TrainingRows

__all__ = ["balance_iteration", "balance_rows", "concat_rows", "deal_rows"]


def _pad_cat(parts: list[Tensor], value: int | bool) -> Tensor:
    width = max(p.shape[1] for p in parts)
    padded = [
        torch.cat([p, torch.full((p.shape[0], width - p.shape[1]), value, dtype=p.dtype)], dim=1)
        if p.shape[1] < width
        else p
        for p in parts
    ]
    return torch.cat(padded, dim=0)


def concat_rows(parts: list[TrainingRows]) -> TrainingRows | None:
    """The rows of ``parts`` in order, right-padded to the longest (padding is masked out); ``None`` for no rows."""
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    rows = TokenRows(
        input_ids=_pad_cat([p.rows.input_ids for p in parts], 0),
        attention_mask=_pad_cat([p.rows.attention_mask for p in parts], False),
        response_mask=_pad_cat([p.rows.response_mask for p in parts], False),
        index=torch.cat([p.rows.index for p in parts], dim=0),
    )
    return TrainingRows(
        rows=rows, advantages=torch.cat([p.advantages for p in parts]), group=torch.cat([p.group for p in parts])
    )


def deal_rows(meta: list[tuple[list[int], list[int]]], world: int) -> list[list[list[int]]]:
    """Who gets which row: ``out[src][dst]`` lists the local indices of rank ``src``'s rows that go to ``dst``.

    Args:
        meta: per rank, ``(groups, lengths)`` of its rows (task group and length of each row, in local order).
        world: number of ranks.

    Rows are sorted by (group, longest first, source rank, local index) and dealt round-robin, so every rank gets
    the same number of rows (within one) of every group, and similar token counts. Deterministic: every rank computes
    the same deal from the same ``meta``.
    """
    if len(meta) != world:
        raise ValueError(f"meta: expected one entry per rank ({world}), got {len(meta)}")
    cells = sorted(
        (g, -n, src, i) for src, (groups, lengths) in enumerate(meta) for i, (g, n) in enumerate(zip(groups, lengths))
    )
    out: list[list[list[int]]] = [[[] for _ in range(world)] for _ in range(world)]
    for k, (_, _, src, i) in enumerate(cells):
        out[src][k % world].append(i)
    for per_src in out:
        for dst_rows in per_src:
            dst_rows.sort()
    return out


def balance_rows(rows: TrainingRows | None, collectives: Collectives) -> TrainingRows | None:
    """This rank's share of every rank's ``rows`` (collective: every rank calls it, with or without rows).

    Returns ``rows`` unchanged with one rank; ``None`` when this rank gets no row. ``collectives``: the run's
    (``RLAnythingLoop`` gives its runtime).
    """
    rank, world = collectives.rank, collectives.world_size
    if world == 1:
        return rows
    local = (
        (rows.group.tolist(), rows.rows.attention_mask.sum(dim=1).tolist()) if rows is not None else ([], [])
    )
    meta: list[Any] = collectives.all_gather_object(local)
    plan = deal_rows(meta, world)
    received: list[TrainingRows] = []
    for src in range(world):
        if not meta[src][0]:
            continue  # every rank knows src holds nothing: no call
        scatter: list[Any] | None = None
        if rank == src:
            assert rows is not None
            scatter = [rows.subset(torch.tensor(plan[src][dst], dtype=torch.int64)) for dst in range(world)]
        received.append(collectives.scatter_object(scatter, src))
    return concat_rows(received)


def balance_iteration(data: IterationData, collectives: Collectives) -> IterationData:
    """``data`` with its policy and judge rows balanced over the ranks (``balance_rows``); collective."""
    return dataclasses.replace(
        data, policy=balance_rows(data.policy, collectives), judge=balance_rows(data.judge, collectives)
    )
