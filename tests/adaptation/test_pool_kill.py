"""Crash safety: SIGKILL a process that keeps updating the pool, at random points; reload and check every time."""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.testing.processes import reaped

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


class _Lines:
    """Lines of a pipe read by a thread, so that a silent child fails the test after ``timeout`` instead of hanging."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put("")  # EOF

    def next(self, timeout: float = 120.0) -> str:
        try:
            return self._queue.get(timeout=timeout).strip()
        except queue.Empty:
            return f"<nothing within {timeout:.0f} s>"


@pytest.mark.slow
def test_pool_survives_random_sigkill(tmp_path: Path) -> None:
    run_dir, ack_path, err_path = tmp_path / "run", tmp_path / "acks.txt", tmp_path / "zygote.err"
    rng = random.Random(1234)
    kills, last = 0, 0
    with open(err_path, "w") as err, reaped([sys.executable, str(CHILD), str(run_dir), str(ack_path)],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=ROOT,
                                            text=True, bufsize=1) as zygote:
        assert zygote.stdin is not None and zygote.stdout is not None
        lines = _Lines(zygote.stdout)
        for round_ in range(25):
            acked_before = _acked(ack_path)
            zygote.stdin.write(f"go {round_}\n")
            zygote.stdin.flush()
            pid_line = lines.next()
            assert pid_line.startswith("pid "), pid_line + err_path.read_text()
            ready = lines.next()
            assert ready == "ready", f"round {round_}: {ready!r}; stderr: {err_path.read_text()[-3000:]}"
            # let the worker acknowledge something first (a loaded machine can be slow to get going), then kill it
            # at a random point of what follows
            deadline = time.monotonic() + 20.0
            while _acked(ack_path) <= acked_before and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(int(pid_line.split()[1]), signal.SIGKILL)
            assert lines.next() == f"exit {-signal.SIGKILL}", err_path.read_text()[-3000:]
            kills += 1
            count = _check_pool(run_dir, ack_path)
            assert count >= last, "accepted tasks went backwards"
            last = count
    assert kills >= 20
    acked = [line for line in ack_path.read_text().splitlines() if line]
    assert len(acked) > 20, "the worker made too little progress for the test to mean anything"
