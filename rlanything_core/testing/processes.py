"""Child processes that tests start and always reap, whatever happens to the test.

A test that starts a process and fails (an assertion, a timeout, Ctrl-C) must not leave it running: an orphan
spinning on a shared machine slows every later test and benchmark. :func:`reaped` starts the command in its own
session (process group) and, on leaving the ``with`` block for any reason, SIGKILLs the whole group (the command and
everything it forked) and waits for it. :func:`run_reaped` is ``subprocess.run`` with that guarantee (plain
``subprocess.run(timeout=...)`` kills only the direct child); :func:`run_ranks` runs the ranks of a distributed test
side by side with it. :func:`die_with_parent` makes a process die with its
parent even when the parent is SIGKILLed (no ``finally`` runs then).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

__all__ = ["die_with_parent", "free_port", "kill_group", "reaped", "run_ranks", "run_reaped"]

_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a test's ``MASTER_PORT``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kill_group(proc: subprocess.Popen[Any], *, wait_s: float = 30.0) -> None:
    """SIGKILL the process group led by ``proc`` (started with ``start_new_session=True``) and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone
    try:
        proc.wait(timeout=wait_s)
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


@contextmanager
def reaped(cmd: Sequence[str], **popen_kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(cmd, start_new_session=True, **popen_kwargs)``; its whole group is killed on exit."""
    proc = subprocess.Popen(list(cmd), start_new_session=True, **popen_kwargs)
    try:
        yield proc
    finally:
        kill_group(proc)


def run_reaped(cmd: Sequence[str], *, timeout: float, **popen_kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(cmd, capture_output=True, timeout=timeout)`` that also reaps grandchildren.

    The command's whole process group is killed when it times out, when the caller is interrupted, and after it
    exits (stray grandchildren).
    """
    popen_kwargs.setdefault("stdout", subprocess.PIPE)
    popen_kwargs.setdefault("stderr", subprocess.PIPE)
    with reaped(cmd, **popen_kwargs) as proc:
        out, err = proc.communicate(timeout=timeout)  # TimeoutExpired propagates; the finally kills the group
        return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def run_ranks(commands: Sequence[Sequence[str]], *, timeout: float, **popen_kwargs: Any) -> None:
    """Start every command at once (the ranks of one process group) and wait for all of them, each reaped.

    Raises ``AssertionError`` naming each rank that exited non-zero with the end of its stderr. A collective that some
    rank never joins hangs the others: ``subprocess.TimeoutExpired`` after ``timeout`` seconds per rank turns that into
    a failure, and every rank's process group is killed whatever happens. stdout is discarded unless given.
    """
    popen_kwargs.setdefault("stdout", subprocess.DEVNULL)
    popen_kwargs.setdefault("stderr", subprocess.PIPE)
    popen_kwargs.setdefault("text", True)
    with ExitStack() as stack:
        procs = [stack.enter_context(reaped(cmd, **popen_kwargs)) for cmd in commands]
        errors = [p.communicate(timeout=timeout)[1] or "" for p in procs]
    failed = {rank: err[-3000:] for rank, (p, err) in enumerate(zip(procs, errors)) if p.returncode != 0}
    if failed:
        tails = "\n".join(f"[rank {rank}] {err}" for rank, err in failed.items())
        raise AssertionError(f"ranks {sorted(failed)} failed:\n{tails}")


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux ``PR_SET_PDEATHSIG``).

    Call it first thing in a helper process (or right after ``fork``): then even a SIGKILLed test (whose cleanup
    never runs) takes its helpers with it. A no-op where ``prctl`` is unavailable.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), sig)
