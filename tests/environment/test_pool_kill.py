"""Crash safety: SIGKILL a process that keeps updating the pool, at random points; reload and check every time."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlanything_core.environment.pool import TaskPool

CHILD = Path(__file__).with_name("_pool_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _check_pool(run_dir: Path, ack_path: Path) -> int:
    pool = TaskPool.load(run_dir, writer=False)  # check() runs inside load
    accepted = pool.accepted_ids()
    assert len(accepted) == len(set(accepted)), "an accepted task is duplicated"
    acked = [line for line in ack_path.read_text().splitlines() if line] if ack_path.exists() else []
    missing = set(acked) - set(accepted)
    assert not missing, f"acknowledged accepts lost: {sorted(missing)[:5]}"
    for tid in accepted:
        assert tid in pool.tasks, f"accepted task {tid} has no task record"
    for slot in pool.slots.values():
        assert slot.active_id in pool.tasks
        assert pool.tasks[slot.active_id].root_id == slot.root_id
    stray = [p for p in (run_dir / "pool").iterdir() if p.name.startswith(".tmp-")]
    assert len(stray) <= 1, f"more than one torn temporary file: {stray}"
    return len(accepted)


@pytest.mark.slow
def test_pool_survives_random_sigkill(tmp_path: Path) -> None:
    run_dir, ack_path = tmp_path / "run", tmp_path / "acks.txt"
    rng = random.Random(1234)
    kills, last = 0, 0
    for round_ in range(24):
        proc = subprocess.Popen([sys.executable, str(CHILD), str(run_dir), str(ack_path), str(round_)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        kills += 1
        count = _check_pool(run_dir, ack_path)
        assert count >= last, "accepted tasks went backwards"
        last = count
    assert kills >= 20
    acked = [line for line in ack_path.read_text().splitlines() if line]
    assert len(acked) > 20, "the child made too little progress for the test to mean anything"
