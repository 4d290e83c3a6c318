"""experiments/train.py end to end: the smoke profile, kill-and-resume, and the CLI's summary line."""

import csv
import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from _runs import REPO, env, run, train_cmd, weights

from rlanything_core.testing.processes import reaped

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    run_dir = tmp_path_factory.mktemp("reference")
    start = time.monotonic()
    match = run(run_dir)
    elapsed = time.monotonic() - start
    assert int(match.group(1)) == 3
    assert int(match.group(2)) >= 1, "the reference run made no policy update: the test would prove nothing"
    assert int(match.group(3)) >= 1, "the reference run made no judge update"
    return run_dir, elapsed


def test_summary_line_and_run_directory(reference: tuple[Path, float]) -> None:
    run_dir, _ = reference
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert (run_dir / "config.yaml").is_file()
    assert (run_dir / "logs" / "metrics.csv").is_file()
    state = json.loads((run_dir / "pool" / "state.json").read_text())
    assert len(list((run_dir / "pool" / "snapshots").glob("iter_*.json"))) == 3
    assert state["state_version"] == 1


def test_rerunning_a_finished_run_does_nothing_more(reference: tuple[Path, float], tmp_path: Path) -> None:
    """Nothing trains again; the final evaluation that reruns replaces its row (on f113c84 it was appended twice)."""
    run_dir, _ = reference
    before = weights(run_dir)
    rows_before = _csv_rows(run_dir)
    match = run(run_dir)
    assert int(match.group(1)) == 3
    after = weights(run_dir)
    assert all(torch.equal(before[k], after[k]) for k in before)
    rows_after = _csv_rows(run_dir)
    assert [(r["step"], r["iteration"], r["eval/iteration"]) for r in rows_after] == [
        (r["step"], r["iteration"], r["eval/iteration"]) for r in rows_before
    ]
    _assert_rows_unique_and_in_order(rows_after)


def test_killed_runs_resume_without_repeating_or_skipping_an_update(
    reference: tuple[Path, float], tmp_path: Path
) -> None:
    """SIGKILL the run at random points (twice), rerun the same command each time: the final weights (policy, judge
    and hence every optimizer step), the accepted tasks and the pool equal the uninterrupted run's, exactly."""
    ref_dir, ref_seconds = reference
    run_dir = tmp_path / "killed"
    rng = random.Random(7)
    kills = 0
    for attempt in range(2):
        with reaped(train_cmd(run_dir), cwd=REPO, env=env(), stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL) as proc:
            delay = rng.uniform(0.25, 0.9) * ref_seconds
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
        del attempt
    final = run(run_dir)
    assert int(final.group(1)) == 3
    assert kills >= 1, "the run finished before any kill: the test proved nothing"
    ref_history = _csv_history(ref_dir)
    assert _csv_history(run_dir) == ref_history  # each iteration logged once, as in the uninterrupted run
    _assert_rows_unique_and_in_order(_csv_rows(run_dir))
    assert (int(final.group(2)), int(final.group(3))) == ref_history[1:]  # counts span the restarts
    ref, got = weights(ref_dir), weights(run_dir)
    assert ref.keys() == got.keys()
    for key in ref:
        assert torch.equal(ref[key], got[key]), f"{key} differs after kill/resume"
    ref_pool = json.loads((ref_dir / "pool" / "state.json").read_text())
    got_pool = json.loads((run_dir / "pool" / "state.json").read_text())
    accepted = [e["task_id"] for e in got_pool["events"] if e["type"] == "accept"]
    assert accepted == [e["task_id"] for e in ref_pool["events"] if e["type"] == "accept"]
    assert len(accepted) == len(set(accepted))
    assert got_pool["slots"] == ref_pool["slots"]


def test_a_finished_run_extended_to_more_iterations_continues_from_its_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "extend"
    assert int(run(run_dir, "iterations=2").group(1)) == 2
    extended = run(run_dir, "iterations=3")
    assert int(extended.group(1)) == 3
    # the history spans the restart: the summary counts every update, metrics.csv holds every iteration once
    history = _csv_history(run_dir)
    assert history[0] == [0, 1, 2]
    assert (int(extended.group(2)), int(extended.group(3))) == history[1:]


def _csv_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "logs" / "metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _assert_rows_unique_and_in_order(rows: list[dict[str, str]]) -> None:
    """``step`` is 0, 1, 2, ... and every iteration and evaluation appears once, in run order."""
    assert [int(r["step"]) for r in rows] == list(range(len(rows)))
    positions = [float(r["iteration"]) if r["iteration"] else float(r["eval/iteration"]) - 0.5 for r in rows]
    assert positions == sorted(set(positions))


def _csv_history(run_dir: Path) -> tuple[list[int], int, int]:
    """(iterations logged, policy updates, judge updates) from ``logs/metrics.csv``."""
    with open(run_dir / "logs" / "metrics.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("iteration")]
    return (
        [int(float(r["iteration"])) for r in rows],
        int(sum(float(r.get("policy/updates") or 0) for r in rows)),
        int(sum(float(r.get("judge/updates") or 0) for r in rows)),
    )


def test_a_run_killed_in_its_final_evaluation_evaluates_on_rerun(reference: tuple[Path, float], tmp_path: Path) -> None:
    """The last checkpoint is written before the final evaluation: a kill in between leaves every iteration done and
    no final evaluation. Rerunning trains nothing and evaluates; the ablation does not count the run as finished."""
    import shutil

    from rlanything_core.ablation.runs import _finished

    ref_dir, _ = reference
    run_dir = tmp_path / "killed_in_eval"
    shutil.copytree(ref_dir, run_dir)
    metrics = run_dir / "logs" / "metrics.csv"
    with open(metrics) as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, [r for r in reader if not r.get("eval/iteration")]
    with open(metrics, "w", newline="") as fh:  # as the kill left it: training rows only
        writer = csv.DictWriter(fh, fieldnames=fields or [])
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "eval_outcomes.json").unlink(missing_ok=True)
    assert not _finished(run_dir, 3) and _finished(ref_dir, 3)
    before = weights(run_dir)
    assert int(run(run_dir).group(1)) == 3
    after = weights(run_dir)
    assert all(torch.equal(before[k], after[k]) for k in before)  # nothing trained again
    assert _finished(run_dir, 3)
    assert (run_dir / "eval_outcomes.json").is_file()


def test_a_finished_run_is_its_records_not_its_checkpoint(reference: tuple[Path, float], tmp_path: Path) -> None:
    """A results folder committed without checkpoints (.gitignore) keeps its finished runs; a kill after the final
    evaluation's metrics row and before its episodes were written leaves the run unfinished (the table needs them)."""
    import shutil

    from rlanything_core.ablation.runs import _finished

    ref_dir, _ = reference
    records = tmp_path / "records"
    shutil.copytree(ref_dir, records, ignore=shutil.ignore_patterns("checkpoints"))
    assert _finished(records, 3) and not _finished(records, 4)
    outcomes = records / "eval_outcomes.json"
    earlier = {**json.loads(outcomes.read_text()), "iteration": 2}  # an earlier evaluation's episodes
    outcomes.write_text(json.dumps(earlier))
    assert not _finished(records, 3)
    outcomes.unlink()
    assert not _finished(records, 3)
