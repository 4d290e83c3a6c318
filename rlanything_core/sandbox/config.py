"""Sandbox settings and test specifications."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FunctionalTest", "SandboxConfig", "SandboxTest", "StdinTest"]


@dataclass(frozen=True)
class SandboxConfig:
    """Resource limits and isolation settings of the sandbox.

    Attributes:
        time_limit_s: default per-test wall-clock limit in seconds (a test may override it); the CPU-seconds rlimit
            is ``ceil(time_limit_s)``.
        memory_mb: address-space rlimit (RLIMIT_AS) of each test process, MiB.
        output_limit_bytes: stdout cap per test; more output stops the test with verdict ``output_limit``.
        stderr_limit_bytes: stderr cap per test (silently truncated).
        file_size_mb: RLIMIT_FSIZE, MiB (a larger write fails with EFBIG).
        max_processes: processes the sandbox uid may have (RLIMIT_NPROC; enforced only for a non-root uid).
        max_open_files: RLIMIT_NOFILE.
        uid: unprivileged uid the tests run as when the caller is root (65534 = nobody).
        gid: unprivileged gid, same rule.
        use_bwrap: True: require bubblewrap (raise if it does not work); False: never use it (warns); None: use it
            when it works, else fall back with a warning.
        tmpfs_mb: size of the private writable ``/tmp`` tmpfs inside bubblewrap, MiB.
        hidden_paths: host directories replaced by an empty tmpfs inside bubblewrap (for example the data folder
            holding the expected outputs, so that a policy cannot learn to read the answers).
        python: interpreter that runs the programs, or None: the first of the host's interpreter,
            ``/usr/bin/python3``, ``/usr/local/bin/python3`` and ``python3`` on PATH that the unprivileged uid can
            execute (a pyenv interpreter under ``/root`` cannot be, since ``/root`` is mode 0700). Programs get the
            standard library of that interpreter (and its site-packages, if any).
        runner_slack_s: extra seconds the host waits for the whole run beyond the sum of the test limits before it
            SIGKILLs the sandbox's process group.
    """

    time_limit_s: float = 4.0
    memory_mb: int = 1024
    output_limit_bytes: int = 4 << 20
    stderr_limit_bytes: int = 64 << 10
    file_size_mb: int = 16
    max_processes: int = 64
    max_open_files: int = 256
    uid: int = 65534
    gid: int = 65534
    use_bwrap: bool | None = None
    tmpfs_mb: int = 256
    hidden_paths: tuple[str, ...] = ()
    python: str | None = None
    runner_slack_s: float = 10.0

    def __post_init__(self) -> None:
        if not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, got {self.time_limit_s!r}")
        for name in (
            "memory_mb",
            "output_limit_bytes",
            "stderr_limit_bytes",
            "file_size_mb",
            "max_processes",
            "max_open_files",
            "tmpfs_mb",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.uid <= 0 or self.gid <= 0:
            raise ValueError(f"uid and gid must be unprivileged (> 0), got uid={self.uid!r} gid={self.gid!r}")
        if self.runner_slack_s < 0:
            raise ValueError(f"runner_slack_s must be >= 0, got {self.runner_slack_s!r}")


@dataclass(frozen=True)
class StdinTest:
    """A stdin/stdout test: the program reads ``stdin`` and its stdout is compared with ``expected``.

    Attributes:
        stdin: bytes fed to the program (a str is encoded as UTF-8).
        expected: expected stdout, or None to only require a clean exit (verdict ``passed`` = exit status 0).
        time_limit_s: per-test wall-clock limit, or None for the config's default.
    """

    __test__ = False

    stdin: bytes | str = b""
    expected: str | None = None
    time_limit_s: float | None = None

    @property
    def stdin_bytes(self) -> bytes:
        """The input as bytes."""
        return self.stdin.encode("utf-8") if isinstance(self.stdin, str) else bytes(self.stdin)


@dataclass(frozen=True)
class FunctionalTest:
    r"""A functional test: ``code`` is appended to the program and the script must run to completion.

    ``code`` typically defines and calls ``check(candidate)`` (for example ``test + "\ncheck(Solution().f)"``).
    Passed iff the script exits 0 after running to its end: a harness line proves that control reached the end of the
    script, so ``sys.exit(0)`` / ``os._exit(0)`` inside the program do not pass. A failed ``assert`` gives
    ``wrong_answer``, any other uncaught exception ``runtime_error``. Code in the same interpreter can still cheat
    (for example by returning an object whose ``__eq__`` is always true); stdin tests do not have that weakness.

    Attributes:
        code: the test code appended after the program.
        time_limit_s: per-test wall-clock limit, or None for the config's default.
    """

    __test__ = False

    code: str
    time_limit_s: float | None = None


SandboxTest = StdinTest | FunctionalTest
