"""The ALFWorld smoke exercises learning: `python experiments/train.py +setting=alfworld
+profile=smoke` makes at least one policy and one judge update (before: 0 and 0, every group out of the bands)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from _runs import REPO, SUMMARY, env

from rlanything_core.testing.processes import run_reaped

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]  # ~80 s on the 2-core CPU machine


def test_the_alfworld_smoke_updates_the_policy_and_the_judge(tmp_path: Path) -> None:
    import sys

    cmd = [sys.executable, "-m", "experiments.train", "+setting=alfworld", "+profile=smoke",
           f"run_dir={tmp_path}"]  # fmt: skip
    proc = run_reaped(cmd, cwd=REPO, env=env(), text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = SUMMARY.match(proc.stdout.strip().splitlines()[-1])
    assert match, proc.stdout[-2000:]
    policy_updates, judge_updates = int(match.group(2)), int(match.group(3))
    assert policy_updates >= 1 and judge_updates >= 1
    with open(tmp_path / "logs" / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    # the judge's balanced process accuracy on the planner-labelled probe set, after every iteration
    assert sum(1 for r in rows if r.get("eval/in_distribution/judge_process_bacc")) >= 2
