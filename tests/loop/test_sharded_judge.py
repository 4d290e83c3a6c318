"""``sharded_judge`` over three gloo ranks: each votes on its task groups, all get every episode judged, in order.

The judge returns judged copies instead of writing votes into the episodes it is given; the sharded judge
must do the same, and give every rank the one-process result (the vote seeds depend on the group, not the batch).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_sharded_judge_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out, world, port = tmp_path_factory.mktemp("sharded_judge"), 3, free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run_ranks([[sys.executable, str(WORKER), str(r), str(world), str(port), str(out)] for r in range(world)],
              timeout=600, cwd=REPO, env=env)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


def test_every_rank_gets_every_episode_judged_in_order_as_one_process_would(ranks: list[dict[str, Any]]) -> None:
    for case in range(2):
        reference = ranks[0]["cases"][case]
        assert reference["plain_stats"]["votes"] > 0
        for r in ranks:
            got = r["cases"][case]
            assert got["judged"] == reference["plain"]  # all episodes, original order, the one-process votes
            assert got["stats"] == reference["plain_stats"]  # counters summed over the ranks
            assert got["inputs_unchanged"]


def test_each_rank_votes_only_on_its_groups(ranks: list[dict[str, Any]]) -> None:
    uneven = [r["cases"][0]["local_votes"] for r in ranks]
    assert all(n > 0 for n in uneven) and sum(uneven) == ranks[0]["cases"][0]["plain_stats"]["votes"], uneven
    few = [r["cases"][1]["local_votes"] for r in ranks]
    assert few[0] == ranks[0]["cases"][1]["plain_stats"]["votes"] and few[1:] == [0, 0], few
