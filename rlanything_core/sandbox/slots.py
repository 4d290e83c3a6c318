"""Exclusive uid slots: each running sandbox owns a pair of uids that no other sandbox uses at the same time.

RLIMIT_NPROC counts every process of a uid, and ``kill(-1, SIGKILL)`` reaches every process of the sender's uid: with
one shared uid a fork bomb in one sandbox starves its neighbours, and a cleanup in one kills the others. A slot ``k``
owns uids ``base + 2k`` (the program) and ``base + 2k + 1`` (the functional-test harness); the slot is held with an
``flock`` on a per-slot lock file, so slots are exclusive across threads and across processes on this machine.

The lock files live in one fixed machine-wide directory (:func:`default_lock_dir`: ``/run/lock``, else
``/var/lock``, else ``/tmp``), never under ``TMPDIR``: two processes with different temporary directories used to
take slot 0 together, and a fork bomb in one sank the other.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LOCK_PARENTS", "UidSlot", "UidSlots", "default_lock_dir"]

LOCK_PARENTS = ("/run/lock", "/var/lock", "/tmp")
"""Machine-wide directories for the slot locks, first usable one wins (the same for every process, any ``TMPDIR``)."""


def default_lock_dir() -> Path:
    """``<first writable LOCK_PARENTS entry>/rla_sandbox_slots``.

    Raises:
        RuntimeError: none of ``LOCK_PARENTS`` is a writable directory.
    """
    for parent in LOCK_PARENTS:
        if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
            return Path(parent) / "rla_sandbox_slots"
    raise RuntimeError(f"sandbox uid slots: none of {', '.join(LOCK_PARENTS)} is a writable directory for the locks")


def _check_lock_dir(path: Path) -> None:
    """Refuse a lock directory someone else owns or can write: whoever holds its files can hold every slot."""
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise RuntimeError(
            f"sandbox uid slots: lock directory {path} must be a directory owned by uid {os.geteuid()} and writable "
            f"by no one else (found uid {info.st_uid}, mode {stat.filemode(info.st_mode)}); remove it or pass "
            "another lock_dir"
        )


@dataclass(frozen=True)
class UidSlot:
    """The uids of one slot."""

    program_uid: int
    harness_uid: int


class UidSlots:
    """A pool of ``count`` slots starting at uid ``base``.

    Args:
        base: first uid of the range (the range is ``[base, base + 2 * count)``).
        count: number of slots (concurrent sandboxes on this machine).
        lock_dir: where the lock files live (default: :func:`default_lock_dir`, the same for every process on this
            machine; a process that passes another directory does not exclude the others).
    """

    def __init__(self, base: int, count: int, lock_dir: str | os.PathLike[str] | None = None) -> None:
        if base <= 0 or count < 1:
            raise ValueError(f"uid slots need base > 0 and count >= 1, got base={base!r} count={count!r}")
        self.base, self.count = base, count
        self.lock_dir = Path(lock_dir) if lock_dir is not None else default_lock_dir()

    @contextmanager
    def acquire(self, poll_s: float = 0.02) -> Iterator[UidSlot]:
        """Hold a free slot for the duration of the ``with`` block (waits while all are taken)."""
        self.lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        _check_lock_dir(self.lock_dir)
        while True:
            for k in range(self.count):
                uid = self.base + 2 * k
                fd = os.open(self.lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield UidSlot(uid, uid + 1)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                return
            time.sleep(poll_s)
