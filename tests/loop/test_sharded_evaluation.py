"""Evaluation sharded over two gloo ranks: each plays part of the episodes, both get the one-process result.

Evaluation used to run on rank 0 alone while the other ranks waited at a barrier. With the real TextWorld engine and
the tiny policy and judge, two ranks split the evaluation games (3 games x 2 runs over 2 splits: uneven shares), and
both end with exactly the metrics and per-episode outcomes of a one-process evaluation (the seeds depend on the
group, not on the batch).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rlanything_core.testing.processes import free_port, run_ranks

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("_sharded_eval_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    base = tmp_path_factory.mktemp("sharded_eval")
    out = base / "out"
    out.mkdir()
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run_ranks([[sys.executable, str(WORKER), str(r), str(port), str(base / "run"), str(out)] for r in range(2)],
              timeout=600, cwd=REPO, env=env)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def test_each_rank_plays_a_share_of_the_games(ranks: list[dict[str, Any]]) -> None:
    total = ranks[0]["tasks_total"]
    played = [r["tasks_played"] for r in ranks]
    assert sum(played) == total and all(0 < n < total for n in played), (played, total)


def test_every_rank_gets_the_one_process_evaluation(ranks: list[dict[str, Any]]) -> None:
    reference = ranks[0]["plain_metrics"]
    assert any(k.endswith("judge_outcome_acc") for k in reference)  # the judge voted: its votes were gathered too
    for r in ranks:
        assert r["metrics"] == reference
        assert r["outcomes"] == ranks[0]["plain_outcomes"]
