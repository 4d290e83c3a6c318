"""The coding evaluation sharded over two gloo ranks: each evaluates part of the problems, both get the one-process
metrics.

The coding evaluation used to run on rank 0 alone while the other ranks waited. With ``sharded=True`` (as
rlanything_core/assembly/coding.py builds it) each rank samples and checks the problems ``k % 2 == rank`` and the
per-problem results are gathered. Two evaluators: the tiny random model on real problems (real sampling, real
sandbox), and seeded scripted programs and tests on a + b problems, whose pass@1 / UT / Detect are not zero, so a
sample seeded by its place in the batch instead of its problem would change them. Uneven shares (5 problems) and a
split with fewer problems than ranks.
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

WORKER = Path(__file__).with_name("_coding_sharded_eval_worker.py")
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared" / "coding"


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    if not (SHARED / "codecontests_test" / "problems.jsonl").is_file():
        pytest.skip(f"no coding data under {SHARED}")
    out = tmp_path_factory.mktemp("coding_sharded_eval")
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run_ranks([[sys.executable, str(WORKER), str(r), str(port), str(out)] for r in range(2)], timeout=300, cwd=REPO,
              env=env)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.parametrize("name", ["tiny", "scripted"])
def test_each_rank_evaluates_its_share_of_the_problems(ranks: list[dict[str, Any]], name: str) -> None:
    plain = ranks[0]["plain"][name]
    assert sorted(ranks[0][name]["groups"] + ranks[1][name]["groups"]) == sorted(plain["groups"])
    for rank, r in enumerate(ranks):
        assert r[name]["groups"] and all(g % 2 == rank for g in r[name]["groups"])
        assert r[name]["test_groups"] == r[name]["groups"]  # the judge's tests too


@pytest.mark.parametrize("name", ["tiny", "scripted"])
def test_every_rank_gets_the_one_process_metrics(ranks: list[dict[str, Any]], name: str) -> None:
    reference = ranks[0]["plain"][name]["metrics"]
    assert ranks[0][name]["metrics"] == ranks[1][name]["metrics"] == reference


def test_the_scripted_metrics_are_not_trivial(ranks: list[dict[str, Any]]) -> None:
    metrics = ranks[0]["plain"]["scripted"]["metrics"]
    assert 0 < metrics["add/pass@1"] < 1 and 0 < metrics["add/ut"] < 1 and metrics["add/detect_total"] > 0


def test_a_problems_programs_are_those_of_one_process(ranks: list[dict[str, Any]]) -> None:
    plain = ranks[0]["plain"]["tiny"]["samples"]
    sharded = {**ranks[0]["tiny"]["samples"], **ranks[1]["tiny"]["samples"]}
    assert sharded == plain and len({tuple(v) for v in plain.values()}) > 1
