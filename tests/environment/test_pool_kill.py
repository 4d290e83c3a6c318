"""Crash safety: SIGKILL a process that keeps updating the pool, at random points; reload and check every time."""

from __future__ import annotations

import os
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


def _acked(ack_path: Path) -> int:
    return len([line for line in ack_path.read_text().splitlines() if line]) if ack_path.exists() else 0


@pytest.mark.slow
def test_pool_survives_random_sigkill(tmp_path: Path) -> None:
    run_dir, ack_path = tmp_path / "run", tmp_path / "acks.txt"
    rng = random.Random(1234)
    zygote = subprocess.Popen([sys.executable, str(CHILD), str(run_dir), str(ack_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True, bufsize=1)
    assert zygote.stdin is not None and zygote.stdout is not None
    kills, last = 0, 0
    try:
        for round_ in range(25):
            acked_before = _acked(ack_path)
            zygote.stdin.write(f"go {round_}\n")
            zygote.stdin.flush()
            pid_line = zygote.stdout.readline()
            assert pid_line.startswith("pid "), pid_line + (zygote.stderr.read() if zygote.stderr else "")
            ready = zygote.stdout.readline()
            assert ready.strip() == "ready", ready
            # let the worker acknowledge something first (a loaded machine can be slow to get going), then kill it
            # at a random point of what follows
            deadline = time.monotonic() + 20.0
            while _acked(ack_path) <= acked_before and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(int(pid_line.split()[1]), signal.SIGKILL)
            assert zygote.stdout.readline().strip() == f"exit {-signal.SIGKILL}"
            kills += 1
            count = _check_pool(run_dir, ack_path)
            assert count >= last, "accepted tasks went backwards"
            last = count
    finally:
        zygote.kill()
        zygote.wait(timeout=30)
    assert kills >= 20
    acked = [line for line in ack_path.read_text().splitlines() if line]
    assert len(acked) > 20, "the worker made too little progress for the test to mean anything"
