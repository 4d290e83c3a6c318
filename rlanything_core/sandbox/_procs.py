"""Process plumbing of the in-sandbox runner: seccomp filter, rlimits, kills, forked children (stdlib only).

Concatenated in front of ``_runner.py`` and run with it as one ``python -c`` script.
"""

from __future__ import annotations

import os
import resource
import signal
import struct
import subprocess
import time

TYPE_CHECKING = False  # typing costs start-up time; mypy treats this name as True
if TYPE_CHECKING:
    from typing import Any  # noqa: F401

__all__ = ["child_setup", "seccomp_filter", "spawn_isolated"]

_CLONE_NEWUSER = 0x10000000
# (AUDIT_ARCH, unshare, clone, clone3) per machine; other arches run without the filter (reported in the record)
_ARCHES = {"x86_64": (0xC000003E, 272, 56, 435), "aarch64": (0xC00000B7, 97, 220, 435)}


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """Classic BPF program for seccomp that refuses new user namespaces.

    ``unshare``/``clone`` with CLONE_NEWUSER -> EPERM, ``clone3`` -> ENOSYS (glibc then falls back to ``clone``,
    whose flags can be inspected), foreign-ABI syscalls -> ENOSYS.

    Returns:
        The filter as bytes (8 bytes per instruction), or None on an unsupported machine.
    """
    arch = _ARCHES.get(machine or os.uname().machine)
    if arch is None:
        return None
    audit, unshare, clone, clone3 = arch
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [
        (ld_abs, 0, 0, 4),  # 0: A = arch
        (jeq, 1, 0, audit),  # 1: native ABI -> 3
        (ret, 0, 0, enosys),  # 2: foreign ABI (int 0x80, x32): refuse
        (ld_abs, 0, 0, 0),  # 3: A = syscall number
        (jge, 7, 0, 0x40000000),  # 4: x32 numbers -> 12
        (jeq, 3, 0, unshare),  # 5: -> 9
        (jeq, 2, 0, clone),  # 6: -> 9
        (jeq, 4, 0, clone3),  # 7: -> 12
        (ret, 0, 0, allow),  # 8
        (ld_abs, 0, 0, 16),  # 9: A = low word of args[0] (flags)
        (jset, 2, 0, _CLONE_NEWUSER),  # 10: -> 13
        (ret, 0, 0, allow),  # 11
        (ret, 0, 0, enosys),  # 12
        (ret, 0, 0, eperm),  # 13
    ]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


class _Seccomp:
    """The filter, laid out in memory before any fork so the child only calls ``prctl``."""

    def __init__(self) -> None:
        self.ok = False
        code = seccomp_filter()
        if code is None:
            return
        try:
            import ctypes

            class Fprog(ctypes.Structure):
                _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

            self._buf = ctypes.create_string_buffer(code, len(code))
            self._prog = Fprog(len(code) // 8, ctypes.cast(self._buf, ctypes.c_void_p))
            self._prctl = ctypes.CDLL(None, use_errno=True).prctl
            self._prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
            self._ptr = ctypes.cast(ctypes.pointer(self._prog), ctypes.c_void_p)
            self.ok = True
        except Exception:  # noqa: BLE001 - no ctypes: report ok=False
            self.ok = False

    def apply(self) -> None:
        """Enter no_new_privs and install the filter (in the forked child)."""
        if not self.ok:
            return
        if self._prctl(38, 1, None, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
        if self._prctl(22, 2, self._ptr, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
            raise OSError("prctl(PR_SET_SECCOMP) failed")


def child_setup(limits: dict[str, int], cpu_s: int, seccomp: _Seccomp, nproc: int) -> None:  # after the uid drop
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"], limits["file_size_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    seccomp.apply()


def spawn_isolated(
    argv: list[str],
    *,
    cwd: str,
    extra_env: dict[str, str] | None = None,
    stdin: int = subprocess.PIPE,
    pass_fds: tuple[int, ...] = (),
    uid: int | None = None,
    preexec_fn: Any = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` the one way the sandbox starts any process: the host's runner and the runner's test programs.

    The child gets a minimal environment (no variable of the caller leaks in), no descriptor but the three pipes and
    ``pass_fds``, and a new session, so that one ``killpg`` of its pid ends everything it starts. stdout and stderr
    are pipes the caller must drain.

    Args:
        argv: the command (for the runner: the bubblewrap prefix, then the interpreter).
        cwd: working directory of the child.
        extra_env: variables added to ``PATH`` and ``LANG`` (``HOME``, ``TMPDIR``).
        stdin: ``subprocess.PIPE`` or ``subprocess.DEVNULL``.
        pass_fds: descriptors the child inherits (a functional test's channel to its harness).
        uid: run as this uid and gid with no supplementary groups (the caller must be root), or None to stay.
        preexec_fn: runs in the child after the uid drop and before exec (rlimits, no_new_privs, seccomp).
    """
    return subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", **(extra_env or {})},
        close_fds=True,
        pass_fds=pass_fds,
        start_new_session=True,
        user=uid,
        group=uid,
        extra_groups=[] if uid is not None else None,
        preexec_fn=preexec_fn,
    )


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all_as(uid: int) -> None:
    """Fork a helper that becomes ``uid`` and sends SIGKILL to every process of that uid (not itself)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(3):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _reap_orphans() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


class _Forked:
    """The few ``Popen`` methods the supervision needs, for a forked (not exec'd) child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.002)
        return self.returncode  # type: ignore[return-value]
