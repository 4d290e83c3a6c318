"""Sandbox for untrusted Python programs: one sandboxed process tree per program, running all of its tests.

Layers of isolation (see ``_runner.py`` for the in-sandbox side, ``bwrap.py`` for the filesystem):

* bubblewrap: new pid/net/ipc/uts namespaces; an allow-list filesystem (the interpreter and its standard library,
  read-only; a private size-limited ``/tmp``; fresh ``/dev`` and ``/proc``; no ``/run``, ``/var``, ``/home`` or data
  and run directories); the whole tree dies with the namespace (``--die-with-parent``);
* a slot of unprivileged uids per running sandbox (``slots.py``) with no supplementary groups, when the caller is
  root: neighbours cannot exhaust each other's process limits or signal each other's processes;
* rlimits per test process (CPU seconds, address space, processes, file size, open files, no core dumps),
  ``no_new_privs`` and a seccomp filter that refuses new user namespaces;
* functional tests run the program and the (trusted) test code in two processes under two uids: values cross as
  plain data and are compared in the harness, which alone reports the outcome (``_harness.py``, ``_wire.py``);
* a per-test wall-clock kill of the test's process groups plus ``kill(-1, SIGKILL)`` as each of the slot's uids,
  and a host-side deadline for the whole run that SIGKILLs the runner's process group;
* concurrent, bounded reading of stdout/stderr and non-blocking binary stdin (no pipe deadlocks).

When bubblewrap is missing or does not work the sandbox falls back to uid slots + rlimits + seccomp + kills in a
private temporary directory, and says so loudly: a ``RuntimeWarning`` at construction and ``bwrap=False`` in every
result. The fallback has no network isolation and no filesystem allow-list (only file permissions), and needs root.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlanything_core.sandbox._procs import spawn_isolated
from rlanything_core.sandbox._wire import dumps
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status
from rlanything_core.sandbox.classify import classify
from rlanything_core.sandbox.compare import OutputJudge
from rlanything_core.sandbox.config import FunctionalTest, SandboxConfig, SandboxTest, StdinTest
from rlanything_core.sandbox.slots import UidSlot, UidSlots
from rlanything_core.sandbox.verdict import ProgramResult, TestResult, Verdict

__all__ = ["Sandbox", "classify", "resolve_python"]

_HERE = Path(__file__).parent
# The in-sandbox scripts are passed as ``python -c`` text: nothing of the repository is mounted inside.
_WIRE_SRC = (_HERE / "_wire.py").read_text(encoding="utf-8")
_FUTURE = "from __future__ import annotations"


def _after_wire(name: str) -> str:
    """``_wire.py`` + ``name``: one script whose only ``__future__`` import is the wire's, at its top."""
    text = (_HERE / name).read_text(encoding="utf-8")
    return _WIRE_SRC + "\n" + "\n".join(ln for ln in text.splitlines() if not ln.startswith(_FUTURE)) + "\n"


_PROGRAM_SRC = _after_wire("_program.py")
_RUNNER_SRC = (
    (_HERE / "_procs.py").read_text(encoding="utf-8")
    + "\n"
    + "\n".join(
        ln for ln in (_HERE / "_runner.py").read_text(encoding="utf-8").splitlines() if not ln.startswith(_FUTURE)
    )
)
_HARNESS_SRC = _after_wire("_harness.py")


def _values_b64(values: Mapping[str, object]) -> str:
    """A functional test's plain-data values in the wire format, base64 (empty when there are none)."""

    def no_handles(value: object) -> int:  # FunctionalTest already checked that every value is plain data
        raise ValueError(f"not plain data: {type(value).__name__}")

    return base64.b64encode(dumps(dict(values), (), no_handles)).decode("ascii") if values else ""


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
    """Pick the interpreter for the tests (see ``SandboxConfig.python``), as a real path.

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
            return os.path.realpath(cand)
    raise RuntimeError(
        f"no Python interpreter among {candidates} can be executed by the sandbox uid; pass "
        "SandboxConfig(python=PATH) with an interpreter outside private directories such as /root"
    )


def _others_can_traverse(path: Path) -> bool:
    """Whether every folder from ``/`` down to ``path`` lets other users through (``o+x``)."""
    try:
        return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))
    except OSError:
        return False


def fallback_work_root() -> str:
    """Where the fallback (no bubblewrap) makes each run's folder: the programs' unprivileged uids must reach it.

    The first of ``tempfile.gettempdir()`` (``TMPDIR``), ``/tmp`` and ``/var/tmp`` that every user can traverse; a
    private ``TMPDIR`` (mode 0700, as a test runner may set) would otherwise fail every program with "Permission
    denied". The run's own folder inside is still created 0700 by root and handed to the program's uid by the runner.

    Raises:
        RuntimeError: none of them can be traversed by other users.
    """
    candidates = (tempfile.gettempdir(), "/tmp", "/var/tmp")
    for root in candidates:
        if os.path.isdir(root) and _others_can_traverse(Path(root).resolve()):
            return root
    raise RuntimeError(
        f"sandbox fallback: none of {', '.join(candidates)} can be traversed by other users (o+x), so the programs' "
        "unprivileged uids could not reach their files; set TMPDIR to such a folder or install bubblewrap"
    )


def _count_uid_processes(uids: set[int]) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid in uids
            except OSError:
                continue
    return count


class Sandbox:
    """Runs untrusted Python programs against their tests (see the module docstring for the isolation).

    Args:
        config: limits and isolation settings.

    Raises:
        RuntimeError: ``config.use_bwrap`` is True and bubblewrap does not work here, or bubblewrap is not in use
            and the caller is not root (without either, a program could signal every process of the caller), or
            the fallback finds no temporary folder its programs' uids can reach (:func:`fallback_work_root`).
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
        if not self._bwrap and not self._root:
            raise RuntimeError(
                f"cannot isolate programs: bubblewrap is not in use ({reason}) and the fallback needs root to run "
                "them under their own uids; install bubblewrap (apt-get install -y bubblewrap) or run as root"
            )
        self.fallback_reason = reason
        self._seccomp_warned = False
        self.python = resolve_python(self.config.python, unprivileged=self._root)
        self.runner_python = resolve_python(None, unprivileged=self._root)
        self._slots = UidSlots(self.config.uid, self.config.max_slots) if self._root else None
        self._work_root = None if self._bwrap else fallback_work_root()
        if not self._bwrap:
            warnings.warn(
                "SANDBOX FALLBACK: bubblewrap is not in use (" + reason + "); untrusted programs run WITHOUT network "
                "isolation and WITHOUT a filesystem allow-list (only uid slots, rlimits, seccomp and kills apply). "
                "Results carry bwrap=False.",
                RuntimeWarning,
                stacklevel=2,
            )
        self._prefix: list[str] = []
        if self._bwrap:
            self._prefix = bwrap_command(
                tmpfs_mb=self.config.tmpfs_mb,
                hidden_paths=self.config.hidden_paths,
                binds=self.config.binds,
                pythons=(self.python, self.runner_python),
            )

    @property
    def bwrap(self) -> bool:
        """Whether bubblewrap isolation is in effect."""
        return self._bwrap

    def _time_limit(self, test: SandboxTest) -> float:
        return float(test.time_limit_s if test.time_limit_s is not None else self.config.time_limit_s)

    @contextlib.contextmanager
    def _slot(self) -> Iterator[UidSlot | None]:
        if self._slots is None:
            yield None
            return
        with self._slots.acquire() as slot:
            yield slot

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
        start = time.monotonic()
        if not tests:
            return ProgramResult(tests=[], bwrap=self._bwrap, wall_s=0.0)
        with self._slot() as slot:
            raw_tests, error = self._run_in_slot(program, tests, slot)
        results = [classify(r, t, judge=judge) for r, t in zip(raw_tests, tests)]
        for _ in range(len(tests) - len(results)):
            results.append(TestResult(Verdict.SANDBOX_ERROR, None, "", "", 0.0, error or "missing runner record"))
        return ProgramResult(tests=results, bwrap=self._bwrap, wall_s=time.monotonic() - start, error=error)

    def _spec(
        self, program: str, tests: Sequence[SandboxTest], limits: list[float], slot: UidSlot | None, workdir: str
    ) -> dict[str, object]:
        """The JSON object the runner reads on its stdin (protocol in ``_runner.py``)."""
        cfg = self.config
        uids = {slot.program_uid, slot.harness_uid} if slot is not None else {os.getuid()}
        return {
            "program": program,
            "workdir": workdir,
            "python": self.python,
            "uid": slot.program_uid if slot is not None else None,
            "harness_uid": slot.harness_uid if slot is not None else None,
            "limits": {
                "memory_bytes": cfg.memory_mb << 20,
                "file_size_bytes": cfg.file_size_mb << 20,
                "nproc": _count_uid_processes(uids) + cfg.max_processes,
                "nofile": cfg.max_open_files,
            },
            "output_limit": cfg.output_limit_bytes,
            "stderr_limit": cfg.stderr_limit_bytes,
            "program_src": _PROGRAM_SRC,
            "harness_src": _HARNESS_SRC,
            "tests": [
                {
                    "kind": "functional" if isinstance(t, FunctionalTest) else "stdin",
                    "stdin_b64": base64.b64encode(t.stdin_bytes).decode("ascii") if isinstance(t, StdinTest) else "",
                    "code": t.code if isinstance(t, FunctionalTest) else "",
                    "setup": t.setup if isinstance(t, FunctionalTest) else "",
                    "program_names": list(t.program_names) if isinstance(t, FunctionalTest) else [],
                    "values_b64": _values_b64(t.values) if isinstance(t, FunctionalTest) else "",
                    "time_limit_s": tl,
                }
                for t, tl in zip(tests, limits)
            ],
        }

    def _run_in_slot(
        self, program: str, tests: Sequence[SandboxTest], slot: UidSlot | None
    ) -> tuple[list[dict[str, object]], str]:
        """Start the runner on ``program``'s tests and wait for its record, at most until the whole run's deadline.

        Returns:
            ``(raw test records, error)``; the error is empty when the runner answered.
        """
        limits = [self._time_limit(t) for t in tests]
        raw_tests: list[dict[str, object]]
        host_dir = None if self._work_root is None else tempfile.mkdtemp(prefix="rla_sandbox_", dir=self._work_root)
        spec = self._spec(program, tests, limits, slot, "/tmp/rla" if host_dir is None else host_dir)
        # without -S: the forked functional harness sees the same site-packages as the programs
        cmd = [*self._prefix, self.runner_python, "-I", "-c", _RUNNER_SRC]
        deadline = sum(limits) + 0.5 * len(tests) + self.config.runner_slack_s
        error, raw_tests = "", []
        try:
            proc = spawn_isolated(cmd, cwd="/")
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
                raw_tests, error = self._read_reply(out, err, proc.returncode)
        if host_dir is not None:
            shutil.rmtree(host_dir, ignore_errors=True)
        return raw_tests, error

    def _read_reply(self, out: bytes, err: bytes, returncode: int) -> tuple[list[dict[str, object]], str]:
        """The runner's test records, or an error quoting its stderr; warns once if seccomp was not in effect."""
        try:
            reply = json.loads(out)
            raw_tests = reply["tests"]
            if reply.get("seccomp") is False and not self._seccomp_warned:
                self._seccomp_warned = True
                warnings.warn(
                    "SANDBOX: the seccomp filter could not be installed on this machine "
                    f"({os.uname().machine}); programs may create user namespaces",
                    RuntimeWarning,
                    stacklevel=4,  # the caller of Sandbox.run
                )
        except (ValueError, KeyError, TypeError):
            return [], f"sandbox runner failed (exit {returncode}): {err.decode('utf-8', errors='replace')[-2000:]}"
        return raw_tests, ""

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
