"""Score an episode's files in a separate process with time, memory and file-size limits.

The result files are the agent's work: a sheet of five million cells, a file that unzips to gigabytes, or one that
makes a reader loop, must not stall or sink the trainer. The getters (which copy the result and the expected files
into the episode's cache) and the metrics run in a child forked for each check from a check server (a separate
Python process that imported the metric libraries once, ``_check_server.py``, so a check starts in milliseconds),
under ``RLIMIT_AS`` (memory), ``RLIMIT_FSIZE`` (each file it writes) and ``RLIMIT_CPU``, and a wall-clock limit that
the server enforces (and, should the server itself hang, the caller). A check that breaks a limit scores 0 with the
limit named (:class:`CheckLimit`); the environment counts them. Checks start only after the episode: the apps and
the action worker are gone by then, so no agent process runs while the expected files are read.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop._processes import stop_process_group
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import Outcome
from rlanything_core.envs.desktop.task import DesktopTask

__all__ = ["CheckLimit", "CheckLimits", "CheckResult", "Checker", "check_files"]

_SERVER_START_S = 120.0  # importing pandas on a loaded machine
_SLACK_S = 10.0  # beyond the check's own limit, before the caller gives up on the server itself


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


@dataclass(frozen=True)
class CheckResult:
    """What a check found: the outcome, and the limit it broke (``None`` when none)."""

    outcome: Outcome
    limit: CheckLimit | None = None


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


class Checker:
    """A check server, started at the first check and stopped by :meth:`close`.

    Args:
        limits: the limits of every check (:class:`CheckLimits`'s defaults).
    """

    def __init__(self, limits: CheckLimits | None = None) -> None:
        self.limits = limits or CheckLimits()
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        # the server imports this very package (a worktree's, an editable or an installed one)
        package_parent = str(Path(__file__).resolve().parents[3])  # the folder holding rlanything_core/
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rlanything_core.envs.desktop._check_server"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._proc = proc
        hello = self._read(_SERVER_START_S)
        if hello is None or not hello.get("ready"):
            self.close()
            raise RuntimeError(f"the check server did not start (answered {hello!r})")
        return proc

    def _read(self, timeout_s: float) -> dict[str, Any] | None:
        proc = self._proc
        if proc is None or proc.stdout is None or not select.select([proc.stdout], [], [], timeout_s)[0]:
            return None
        line = proc.stdout.readline()
        try:
            answer = json.loads(line) if line else None
        except json.JSONDecodeError:
            return None
        return answer if isinstance(answer, dict) else None

    def check(
        self,
        task: DesktopTask,
        fs: EpisodeFS,
        *,
        screen: tuple[int, int],
        postconfig_error: str = "",
        profile_dir: str | Path | None = None,
    ) -> CheckResult:
        """Run the getters and metrics of ``task`` on the episode ``fs`` in a limited child process.

        ``profile_dir``: LibreOffice's real profile, where a check of the app's settings reads them (the app must
        have stopped); ``None``: such a check reads the file at its VM path in the episode home.

        Returns:
            The outcome (score 0 with the broken limit named when the check broke one) and that limit.
        """
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        # the whole task: its file cache (OSWorld's gold files) and its key too, or the check finds no expected file
        t = {"task_id": task.task_id, "instruction": task.instruction, "config": task.config,
             "evaluator": task.evaluator, "task_dir": str(task.task_dir), "raw": task.raw,
             "cache_dir": None if task.cache_dir is None else str(task.cache_dir), "cache_key": task.cache_key,
             "json_path": None if task.json_path is None else str(task.json_path)}
        request = {"task": t, "root": str(fs.root), "owner": fs.owner, "screen": list(screen),
                   "postconfig_error": postconfig_error, "limits": asdict(self.limits),
                   "profile_dir": None if profile_dir is None else str(profile_dir)}
        assert proc.stdin is not None
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            answer = None
        else:
            answer = self._read(self.limits.time_s + _SLACK_S)
        if answer is None:  # the server itself hung or died: a fresh one serves the next check
            self.close()
            answer = {"limit": CheckLimit.TIME.value, "detail": f"over {self.limits.time_s:g} s (server restarted)"}
        if "limit" in answer:
            limit = CheckLimit(answer["limit"])
            why = f"the check broke its {limit.value} limit ({answer.get('detail', '')})"
            return CheckResult(Outcome(0.0, error=_join(postconfig_error, why)), limit)
        metrics = tuple((str(name), float(score)) for name, score in answer["metrics"])
        return CheckResult(Outcome(float(answer["score"]), metrics, str(answer["error"])))

    def close(self) -> None:
        """Stop the server (and any check it runs)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process_group(proc, timeout_s=10)


def check_files(
    task: DesktopTask,
    fs: EpisodeFS,
    *,
    screen: tuple[int, int],
    postconfig_error: str = "",
    limits: CheckLimits | None = None,
    profile_dir: str | Path | None = None,
) -> CheckResult:
    """One check with a server of its own (:meth:`Checker.check`; an environment keeps one :class:`Checker`)."""
    checker = Checker(limits)
    try:
        return checker.check(task, fs, screen=screen, postconfig_error=postconfig_error, profile_dir=profile_dir)
    finally:
        checker.close()
