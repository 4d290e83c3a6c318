"""The task pool's writer is global rank 0, chosen once the process group exists; the others get its state by broadcast.

Two gloo processes with no launcher rank variable (as under ``srun``), both holding the pool read-only as the builders
make it. Rank 1 sees a stale copy of the run directory (shared storage served from an old cache): if it re-read the
pool from storage it would miss the writer's changes (the writer used to be guessed from ``RANK`` before the
process group existed, and the other ranks reloaded ``state.json`` from shared storage).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_pool_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    base = tmp_path_factory.mktemp("pool")
    shared, stale, out = base / "shared", base / "stale", base / "out"
    for d in (shared, stale, out):
        d.mkdir()
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    # a rank waiting for a writer that never answers would hang: the timeout fails it
    run_ranks([[sys.executable, str(WORKER), str(r), str(port), str(shared), str(stale), str(out)] for r in range(2)],
              timeout=600, env=env)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def test_global_rank_0_alone_is_the_writer(ranks: list[dict[str, Any]]) -> None:
    assert [r["initial"]["writer"] for r in ranks] == [True, False]
    assert [r["after_sync"]["writer"] for r in ranks] == [True, False]
    assert not ranks[1]["stale_state_written"]  # rank 1 never wrote (nor could have read) the pool


def test_the_writer_adapts_on_everything_gathered(ranks: list[dict[str, Any]]) -> None:
    assert ranks[0]["metrics"]["env/rates_seen"] == 4.0 and ranks[0]["metrics"]["env/items_seen"] == 2.0
    assert "env/rates_seen" not in ranks[1]["metrics"]
    assert ranks[0]["metrics"]["env/accepted_total"] == ranks[1]["metrics"]["env/accepted_total"]


def test_the_other_ranks_receive_the_writers_state_not_their_stale_storage(ranks: list[dict[str, Any]]) -> None:
    for stage in ("initial", "after_sync", "restored"):
        mine = {k: v for k, v in ranks[1][stage].items() if k != "writer"}
        assert mine == {k: v for k, v in ranks[0][stage].items() if k != "writer"}, stage
    # only the writer's broadcast holds the candidates (rank 1 made two of them, but added none itself)
    assert ranks[1]["after_sync"]["pending"] == ["r0@v1-e", "r1@v1-h", "r2@v1-h", "r3@v1-h"]
    assert ranks[1]["restored"]["pending"] == [] and ranks[1]["restored"]["generation"] == 1


def test_an_error_on_the_writer_is_raised_on_every_rank(ranks: list[dict[str, Any]]) -> None:
    assert ranks[0]["error"] == "ValueError: the rewriter broke"
    assert ranks[1]["error"] == "RuntimeError: the pool writer (rank 0) failed: ValueError: the rewriter broke"


def test_rewrites_are_spread_over_the_ranks(ranks: list[dict[str, Any]]) -> None:
    """The rewriter (an LLM call per request) used to run on rank 0 only while the others waited. Each rank now
    rewrites a share of the requests; the writer adds every candidate in request order, as one process would."""
    shares = [sorted(r["rewrote"]) for r in ranks]
    assert all(shares) and not set(shares[0]) & set(shares[1]), shares
    assert sorted(shares[0] + shares[1]) == ["r0", "r1", "r2", "r3"]
    assert ranks[0]["metrics"]["env/scheduled"] == 4.0 and ranks[0]["metrics"]["env/requests"] == 4.0
