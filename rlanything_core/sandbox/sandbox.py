"""Sandbox for untrusted Python programs: one sandboxed process tree per program, running all of its tests.

Layers of isolation (see ``_runner.py`` for the in-sandbox side):

* bubblewrap: new pid/net/ipc/uts namespaces, read-only ``/``, a private size-limited tmpfs ``/tmp``, fresh ``/dev``
  and ``/proc``; the whole tree dies with the namespace (``--die-with-parent``);
* an unprivileged uid/gid (65534) with no supplementary groups for every test process when the caller is root;
* rlimits per test process: CPU seconds, address space, processes, file size, open files, no core dumps;
* a per-test wall-clock kill of the test's whole process group (SIGKILL) plus, in the pid namespace, a
  ``kill(-1, SIGKILL)`` as the sandbox uid that reaches setsid daemons; and a host-side deadline for the whole run
  that SIGKILLs the runner's process group (the namespace goes with it);
* concurrent, bounded reading of stdout/stderr and non-blocking binary stdin (no pipe deadlocks).

When bubblewrap is missing or does not work the sandbox falls back to uid + rlimits + process-group kill in a private
temporary directory, and says so loudly: a ``RuntimeWarning`` at construction and ``bwrap=False`` in every result.
The fallback has no network isolation and no read-only filesystem.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The runner is stdlib-only (it runs inside the sandbox under the system interpreter); the host reuses its sweep.
from rlanything_core.sandbox._runner import _sweep_marker
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status
from rlanything_core.sandbox.compare import OutputJudge
from rlanything_core.sandbox.config import FunctionalTest, SandboxConfig, SandboxTest, StdinTest
from rlanything_core.sandbox.verdict import ProgramResult, TestResult, Verdict

__all__ = ["Sandbox", "classify", "resolve_python"]

_RUNNER = str(Path(__file__).with_name("_runner.py"))
_SIGXCPU = int(signal.SIGXCPU)


def _decode(b64: str) -> str:
    return base64.b64decode(b64).decode("utf-8", errors="replace")


def _last_exception_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def classify(
    raw: dict[str, object],
    test: SandboxTest,
    *,
    judge: OutputJudge,
    nonce: str,
) -> TestResult:
    """Turn one raw runner record into a verdict (pure function of the record).

    Args:
        raw: the runner's record (``status``, ``exit_code``, ``stdout_b64``, ``stderr_b64``, ``wall_s``, ``error``).
        test: the test it belongs to.
        judge: output comparison settings (stdin tests).
        nonce: the functional harness's completion token of this run.

    Returns:
        The test result.
    """
    status = str(raw["status"])
    code = raw["exit_code"] if isinstance(raw["exit_code"], int) else None
    stdout = _decode(str(raw["stdout_b64"]))
    stderr = _decode(str(raw["stderr_b64"]))
    wall = float(raw["wall_s"])  # type: ignore[arg-type]

    def result(verdict: Verdict, detail: str = "", out: str = stdout) -> TestResult:
        return TestResult(verdict=verdict, exit_code=code, stdout=out, stderr=stderr, wall_s=wall, detail=detail)

    if status == "spawn_error":
        return result(Verdict.SANDBOX_ERROR, f"could not start the test process: {raw.get('error', '')}")
    if status == "output_limit":
        return result(Verdict.OUTPUT_LIMIT, "stdout exceeded output_limit_bytes")
    if status == "timeout":
        return result(Verdict.TIMEOUT, "wall-clock limit exceeded")
    if code == -_SIGXCPU:
        return result(Verdict.TIMEOUT, "CPU-time limit exceeded (SIGXCPU)")
    last = _last_exception_line(stderr)
    if code != 0 and ("MemoryError" in last or "Cannot allocate memory" in stderr or "bad_alloc" in stderr):
        return result(Verdict.MEMORY, last)
    if isinstance(test, FunctionalTest):
        token = "\n" + nonce + "\n"
        completed = stdout.endswith(token)
        out = stdout[: -len(token)] if completed else stdout
        if code == 0 and completed:
            return result(Verdict.PASSED, out=out)
        if code == 0:
            return result(Verdict.WRONG_ANSWER, "exited 0 before the end of the tests", out=out)
        if last.startswith("AssertionError"):
            return result(Verdict.WRONG_ANSWER, last, out=out)
        return result(Verdict.RUNTIME_ERROR, last or f"exit status {code}", out=out)
    if code != 0:
        return result(Verdict.RUNTIME_ERROR, last or f"exit status {code}")
    if test.expected is None or judge(stdout, test.expected):
        return result(Verdict.PASSED)
    return result(Verdict.WRONG_ANSWER, "output differs from the expected output")


def _world_executable(path: str) -> bool:
    """Whether a user with no owner/group rights can execute ``path`` (every directory searchable, file o+x)."""
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        return False
    parts = Path(real).parents
    try:
        return all(os.stat(d).st_mode & stat.S_IXOTH for d in parts) and bool(os.stat(real).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def resolve_python(python: str | None, *, unprivileged: bool) -> str:
    """Pick the interpreter for the tests (see ``SandboxConfig.python``).

    Raises:
        RuntimeError: no candidate is executable by the unprivileged uid.
    """
    if python is not None:
        candidates = [python]
    else:
        base = getattr(sys, "_base_executable", sys.executable)
        which = shutil.which("python3")
        candidates = [sys.executable, base, "/usr/bin/python3", "/usr/local/bin/python3"] + ([which] if which else [])
    for cand in candidates:
        if cand and (_world_executable(cand) if unprivileged else os.access(cand, os.X_OK)):
            return cand
    raise RuntimeError(
        f"no Python interpreter among {candidates} can be executed by the sandbox uid; pass "
        "SandboxConfig(python=PATH) with an interpreter outside private directories such as /root"
    )


def _count_uid_processes(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid == uid
            except OSError:
                continue
    return count


class Sandbox:
    """Runs untrusted Python programs against their tests (see the module docstring for the isolation).

    Args:
        config: limits and isolation settings.

    Raises:
        RuntimeError: ``config.use_bwrap`` is True and bubblewrap does not work here.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._root = os.getuid() == 0
        if self.config.use_bwrap is False:
            self._bwrap, reason = False, "disabled by SandboxConfig(use_bwrap=False)"
        else:
            self._bwrap, reason = bwrap_status(self.config.tmpfs_mb)
            if not self._bwrap and self.config.use_bwrap:
                raise RuntimeError(f"use_bwrap=True but bubblewrap does not work: {reason}")
        self.fallback_reason = reason
        self.python = resolve_python(self.config.python, unprivileged=self._root)
        if not self._bwrap:
            warnings.warn(
                "SANDBOX FALLBACK: bubblewrap is not in use (" + reason + "); untrusted programs run WITHOUT network "
                "isolation and WITHOUT a read-only filesystem (only uid, rlimits and process-group kill apply). "
                "Results carry bwrap=False.",
                RuntimeWarning,
                stacklevel=2,
            )
        # The runner and the interpreters must stay reachable inside (a checkout or venv may live under /tmp).
        visible = (sys.prefix, os.path.dirname(_RUNNER), os.path.dirname(self.python))
        self._prefix = (
            bwrap_command(tmpfs_mb=self.config.tmpfs_mb, hidden_paths=self.config.hidden_paths, visible_paths=visible)
            if self._bwrap
            else []
        )

    @property
    def bwrap(self) -> bool:
        """Whether bubblewrap isolation is in effect."""
        return self._bwrap

    def _time_limit(self, test: SandboxTest) -> float:
        tl = test.time_limit_s if test.time_limit_s is not None else self.config.time_limit_s
        if not tl > 0:
            raise ValueError(f"tests[].time_limit_s must be > 0, got {tl!r}")
        return float(tl)

    def run(self, program: str, tests: Sequence[SandboxTest], *, judge: OutputJudge | None = None) -> ProgramResult:
        """Run ``program`` on every test in one sandboxed process tree.

        Args:
            program: Python source text (untrusted).
            tests: StdinTest / FunctionalTest items (may be mixed).
            judge: output comparison for stdin tests (default: whitespace-normalized exact match).

        Returns:
            A ProgramResult with one TestResult per test, in order.
        """
        if not isinstance(program, str):
            raise ValueError(f"program must be a str of Python source, got {type(program).__name__}")
        for i, t in enumerate(tests):
            if not isinstance(t, StdinTest | FunctionalTest):
                raise ValueError(f"tests[{i}] must be a StdinTest or FunctionalTest, got {type(t).__name__}")
        judge = judge or OutputJudge()
        cfg = self.config
        start = time.monotonic()
        if not tests:
            return ProgramResult(tests=[], bwrap=self._bwrap, wall_s=0.0)
        limits = [self._time_limit(t) for t in tests]
        nonce, marker = secrets.token_hex(16), "rla-" + secrets.token_hex(8)
        target_uid = cfg.uid if self._root else os.getuid()
        host_dir = None if self._bwrap else tempfile.mkdtemp(prefix="rla_sandbox_")
        if host_dir is not None:
            os.chmod(host_dir, 0o711)
        spec = {
            "program": program,
            "workdir": "/tmp/rla_sandbox" if self._bwrap else host_dir,
            "python": self.python,
            "uid": cfg.uid if self._root else None,
            "gid": cfg.gid if self._root else None,
            "limits": {
                "memory_bytes": cfg.memory_mb << 20,
                "file_size_bytes": cfg.file_size_mb << 20,
                "nproc": _count_uid_processes(target_uid) + cfg.max_processes,
                "nofile": cfg.max_open_files,
            },
            "output_limit": cfg.output_limit_bytes,
            "stderr_limit": cfg.stderr_limit_bytes,
            "nonce": nonce,
            "marker": marker,
            "kill_all_as_uid": self._bwrap,
            "tests": [
                {
                    "kind": "functional" if isinstance(t, FunctionalTest) else "stdin",
                    "stdin_b64": base64.b64encode(t.stdin_bytes).decode("ascii") if isinstance(t, StdinTest) else "",
                    "code": t.code if isinstance(t, FunctionalTest) else "",
                    "time_limit_s": tl,
                }
                for t, tl in zip(tests, limits)
            ],
        }
        cmd = [*self._prefix, sys.executable, "-I", "-S", _RUNNER]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        deadline = sum(limits) + 0.5 * len(tests) + cfg.runner_slack_s
        error, raw_tests = "", []
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            proc, error = None, f"could not start the sandbox runner: {exc}"
        if proc is not None:
            try:
                out, err = proc.communicate(json.dumps(spec).encode("utf-8"), timeout=deadline)
            except subprocess.TimeoutExpired:
                self._kill(proc.pid)
                out, err = proc.communicate()
                error = f"sandbox runner exceeded its {deadline:.1f} s deadline and was killed"
            finally:
                self._kill(proc.pid)
            if not error:
                try:
                    raw_tests = json.loads(out)["tests"]
                except (ValueError, KeyError, TypeError):
                    error = (
                        f"sandbox runner failed (exit {proc.returncode}): "
                        f"{err.decode('utf-8', errors='replace')[-2000:]}"
                    )
        if host_dir is not None:
            _sweep_marker(marker)
            shutil.rmtree(host_dir, ignore_errors=True)
        results = [classify(r, t, judge=judge, nonce=nonce) for r, t in zip(raw_tests, tests)]
        for _ in range(len(tests) - len(results)):
            results.append(TestResult(Verdict.SANDBOX_ERROR, None, "", "", 0.0, error or "missing runner record"))
        return ProgramResult(tests=results, bwrap=self._bwrap, wall_s=time.monotonic() - start, error=error)

    @staticmethod
    def _kill(pgid: int) -> None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def run_many(
        self,
        jobs: Sequence[tuple[str, Sequence[SandboxTest]]],
        *,
        judge: OutputJudge | None = None,
        judges: Sequence[OutputJudge] | None = None,
        max_workers: int = 2,
    ) -> list[ProgramResult]:
        """Run several programs concurrently (each in its own sandbox).

        Args:
            jobs: ``(program, tests)`` pairs.
            judge: comparison settings shared by all jobs.
            judges: per-job comparison settings (overrides ``judge``); same length as ``jobs``.
            max_workers: programs running at the same time (keep at most the number of cores: contention turns
                slow-but-correct programs into timeouts).

        Returns:
            One ProgramResult per job, in order.
        """
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers!r}")
        if judges is not None and len(judges) != len(jobs):
            raise ValueError(f"judges must have one entry per job ({len(jobs)}), got {len(judges)}")
        per_job = list(judges) if judges is not None else [judge or OutputJudge()] * len(jobs)
        if max_workers == 1 or len(jobs) <= 1:
            return [self.run(p, t, judge=j) for (p, t), j in zip(jobs, per_job)]
        with ThreadPoolExecutor(max_workers=max_workers) as pool:
            futures = [pool.submit(self.run, p, t, judge=j) for (p, t), j in zip(jobs, per_job)]
            return [f.result() for f in futures]
