"""Uid slots are exclusive machine-wide, whatever each process's ``TMPDIR`` is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlanything_core.sandbox.slots import LOCK_PARENTS, UidSlots, default_lock_dir

REPO = Path(__file__).resolve().parents[2]
BASE = 71000  # outside the default sandbox range: the machine-wide locks of concurrent test runs are not touched
HOLD = (
    "import sys\n"
    "from rlanything_core.sandbox.slots import UidSlots\n"
    f"with UidSlots({BASE}, 1).acquire() as slot:\n"
    "    print(slot.program_uid, flush=True)\n"
    "    sys.stdin.read()\n"
)


def _holder(tmpdir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def test_two_processes_with_different_tmpdir_never_share_a_slot(tmp_path: Path) -> None:
    """Old behaviour: the locks lived under ``$TMPDIR``, so the second process took slot 0 at once as well."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _holder(tmp_path / "a")
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == str(BASE)
        second = _holder(tmp_path / "b")
        time.sleep(1.5)  # long enough for an interpreter start and an import; the slot stays held by the first
        assert second.poll() is None
        assert second.stdout is not None and not _ready(second.stdout.fileno())
        first.communicate("", timeout=10)  # releases the slot
        assert second.stdout.readline().strip() == str(BASE)
        second.communicate("", timeout=10)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def _ready(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


def test_default_lock_dir_is_machine_wide(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    lock_dir = default_lock_dir()
    assert str(lock_dir.parent) in LOCK_PARENTS and tmp_path not in lock_dir.parents
    assert UidSlots(BASE, 1).lock_dir == lock_dir


def test_lock_dir_writable_by_others_is_refused(tmp_path: Path) -> None:
    """Whoever can create the lock files can hold every slot (or swap a file under a holder)."""
    shared = tmp_path / "locks"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(RuntimeError, match=r"locks must be a directory owned by uid \d+ .*mode drwxrwxrwx"):
        with UidSlots(BASE, 1, lock_dir=shared).acquire():
            pass
