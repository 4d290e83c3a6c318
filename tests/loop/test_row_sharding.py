"""Training rows dealt over the ranks (any rank count works, also more ranks than task groups).

Rollouts are sharded by task group; ``balance_rows`` re-deals the finished rows so that every rank, including one
that rolled out nothing, trains on an equal share: the union is every row exactly once, each group is spread over
the ranks, and the counts differ by at most one row per group.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch
from _row_sharding_worker import global_rows

from rlanything_core.loop.protocol import SINGLE_PROCESS
from rlanything_core.loop.row_sharding import balance_rows, concat_rows, deal_rows
from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_row_sharding_worker.py")
REPO = Path(__file__).resolve().parents[2]


def test_deal_gives_every_row_once_and_spreads_each_group() -> None:
    meta = [([0, 0, 0, 2, 2], [5, 3, 4, 2, 2]), ([1, 1, 1, 1], [3, 3, 3, 9]), ([], [])]
    plan = deal_rows(meta, 3)
    for src, (groups, _) in enumerate(meta):
        dealt = sorted(i for dst in range(3) for i in plan[src][dst])
        assert dealt == list(range(len(groups)))
    for g in (0, 1, 2):
        per_dst = [sum(meta[s][0][i] == g for s in range(3) for i in plan[s][d]) for d in range(3)]
        assert max(per_dst) - min(per_dst) <= 1, (g, per_dst)
    assert all(plan[s][2] for s in (0, 1))  # the rank without rows receives from both


def test_deal_rejects_meta_of_the_wrong_world() -> None:
    with pytest.raises(ValueError, match="meta"):
        deal_rows([([], [])], 2)


def test_concat_pads_to_the_longest_row_and_keeps_every_field() -> None:
    rows = global_rows()
    a, b = rows.subset(torch.tensor([0, 4])), rows.subset(torch.tensor([3, 7, 10]))
    both = concat_rows([a, b])
    assert both is not None and both.num_rows == 5
    assert both.rows.input_ids.shape[1] == max(a.rows.input_ids.shape[1], b.rows.input_ids.shape[1])
    assert both.group.tolist() == [0, 0, 0, 1, 2]
    assert torch.equal(both.rows.attention_mask.sum(dim=1), torch.tensor([2, 2, 5, 5, 4]))
    assert concat_rows([]) is None


def test_one_process_passes_rows_through() -> None:
    rows = global_rows()
    assert balance_rows(rows, SINGLE_PROCESS) is rows and balance_rows(None, SINGLE_PROCESS) is None


def test_three_ranks_one_without_task_group_each_train_a_share(tmp_path: Path) -> None:
    world, port = 3, free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run_ranks([[sys.executable, str(WORKER), str(r), str(world), str(port), str(tmp_path)] for r in range(world)],
              timeout=600, cwd=REPO, env=env)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    assert results[world - 1]["held"] == 0 and results[world - 1]["received"]  # no task group, still trains
    rows = global_rows()
    expected = sorted(
        [rows.rows.input_ids[n, : int(rows.rows.attention_mask[n].sum())].tolist(), float(rows.advantages[n]),
         int(rows.group[n])]
        for n in range(rows.num_rows)
    )
    received = sorted(x for r in results for x in r["received"])
    assert received == expected  # every row exactly once, unchanged
    counts = [len(r["received"]) for r in results]
    assert max(counts) - min(counts) <= 1, counts
