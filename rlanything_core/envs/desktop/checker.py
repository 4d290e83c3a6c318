"""Score an episode's files in a separate process with time, memory and file-size limits.

The result files are the agent's work: a sheet of five million cells, a file that unzips to gigabytes, or one that
makes a reader loop, must not stall or sink the trainer. The getters (which copy the result and the expected files
into the episode's cache) and the metrics run in a child process forked from a clean server
(``multiprocessing``'s ``forkserver``, with the metric libraries preloaded, so a check starts in milliseconds) under
``RLIMIT_AS`` (memory), ``RLIMIT_FSIZE`` (each file it writes) and ``RLIMIT_CPU``, and a wall-clock limit enforced
from outside. A check that breaks a limit scores 0 with the limit named (:class:`CheckLimit`); the environment
counts them. The child is started only after the episode: the apps and the action worker are gone by then, so no
agent process runs while the expected files are read.
"""

from __future__ import annotations

import errno
import multiprocessing
import resource
import signal
import threading
from dataclasses import dataclass
from enum import Enum
from multiprocessing.connection import Connection
from typing import Any

from rlanything_core.envs.desktop.config_steps import StepContext
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import Outcome, score_files
from rlanything_core.envs.desktop.task import DesktopTask

__all__ = ["CheckLimit", "CheckLimits", "CheckResult", "check_files"]

_PRELOAD = ["rlanything_core.envs.desktop.checker", "openpyxl", "pandas"]
_CONTEXT_LOCK = threading.Lock()
_CONTEXT: Any = None


class CheckLimit(str, Enum):
    """Which limit a check broke (the reason counted by the environment)."""

    TIME = "time"
    MEMORY = "memory"
    FILE_SIZE = "file_size"
    CRASH = "crash"


@dataclass(frozen=True)
class CheckLimits:
    """Limits of one check.

    Attributes:
        time_s: wall-clock seconds (CPU seconds are limited to the same number).
        memory_mb: address space, MiB.
        file_mb: largest file the check may write (the copies of the result and expected files), MiB.
    """

    time_s: float = 60.0
    memory_mb: int = 3072
    file_mb: int = 256

    def __post_init__(self) -> None:
        if not self.time_s > 0:
            raise ValueError(f"CheckLimits.time_s must be > 0, got {self.time_s!r}")
        if self.memory_mb < 256 or self.file_mb < 1:
            raise ValueError(f"CheckLimits needs memory_mb >= 256, file_mb >= 1; got {self.memory_mb}, {self.file_mb}")


def _context() -> Any:
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(_PRELOAD)
            _CONTEXT = ctx
        return _CONTEXT


def _limited(limits: CheckLimits) -> None:
    """Apply ``limits`` to this (child) process."""
    memory = limits.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits.file_mb << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    cpu = int(limits.time_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too large write then fails with EFBIG, which is reported


def _child(task: DesktopTask, root: str, screen: tuple[int, int], postconfig_error: str, limits: CheckLimits,
           out: Connection) -> None:
    """The check itself (runs in the forked child)."""
    try:
        _limited(limits)
        ctx = StepContext(EpisodeFS(root), None, None, task.task_dir, screen)
        outcome = score_files(task, ctx, postconfig_error=postconfig_error)
        out.send(("ok", outcome.score, outcome.metrics, outcome.error))
    except MemoryError:
        out.send(("limit", CheckLimit.MEMORY.value, f"over {limits.memory_mb} MiB"))
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            out.send(("limit", CheckLimit.FILE_SIZE.value, f"a file over {limits.file_mb} MiB"))
        else:
            out.send(("ok", 0.0, (), f"evaluation failed: {type(exc).__name__}: {exc}"))
    except Exception as exc:  # a broken metric input is a failed episode, with its reason
        out.send(("ok", 0.0, (), f"evaluation failed: {type(exc).__name__}: {exc}"))


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check_files` found: the outcome, and the limit it broke (``None`` when none)."""

    outcome: Outcome
    limit: CheckLimit | None = None


def check_files(
    task: DesktopTask,
    fs: EpisodeFS,
    *,
    screen: tuple[int, int],
    postconfig_error: str = "",
    limits: CheckLimits = CheckLimits(),
) -> CheckResult:
    """Run the getters and metrics of ``task`` on the episode ``fs`` in a limited child process.

    Returns:
        The outcome (score 0 with the broken limit named when the check broke one) and that limit.
    """
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child, args=(task, str(fs.root), screen, postconfig_error, limits, send), daemon=True
    )
    proc.start()
    send.close()
    try:
        message: Any = receive.recv() if receive.poll(limits.time_s) else None
    except EOFError:
        message = None
    finally:
        receive.close()
    if proc.is_alive():
        proc.kill()
    proc.join(timeout=10)
    if message is None:
        if proc.exitcode in (-signal.SIGKILL, -signal.SIGXCPU, None):
            limit, why = CheckLimit.TIME, f"the check ran over {limits.time_s:g} s"
        else:
            limit, why = CheckLimit.CRASH, f"the check process died (exit code {proc.exitcode})"
        return CheckResult(Outcome(0.0, error=_join(postconfig_error, why)), limit)
    if message[0] == "limit":
        limit = CheckLimit(message[1])
        return CheckResult(Outcome(0.0, error=_join(postconfig_error, f"the check broke its {limit.value} limit "
                                                    f"({message[2]})")), limit)
    _, score, metrics, error = message
    return CheckResult(Outcome(float(score), tuple(metrics), error))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
