"""Sandbox settings and test specifications."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_TIME_LIMIT_S",
    "FunctionalTest",
    "SandboxConfig",
    "SandboxTest",
    "StdinTest",
    "check_plain_data",
    "check_time_limit",
]

_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_PLAIN_COLLECTIONS = (list, tuple, set, frozenset)


MAX_TIME_LIMIT_S = 86400.0
"""The largest accepted time limit (one day): a larger one is a mistake, and ``inf`` overflows the CPU rlimit."""


def check_time_limit(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number in ``(0, MAX_TIME_LIMIT_S]``.

    Raises:
        ValueError: naming ``name`` and what was wrong (not a number, NaN, infinite, <= 0, too large).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or not 0.0 < v <= MAX_TIME_LIMIT_S:
        raise ValueError(f"{name} must be a finite number of seconds in (0, {MAX_TIME_LIMIT_S:g}], got {value!r}")
    return v


def check_plain_data(name: str, value: object, *, _depth: int = 0) -> None:
    """Raise unless ``value`` is plain data, the only values that reach a functional test's harness as data.

    Plain data: None, bool, int, float, complex, str, bytes, or lists, tuples, sets, frozensets and dicts of plain
    data (exact types, no subclasses; at most 100 levels deep).

    Raises:
        ValueError: naming ``name`` and the first value that is not plain data.
    """
    if _depth > 100:
        raise ValueError(f"{name}: plain data nested more than 100 levels deep")
    t = type(value)
    if t in _PLAIN_SCALARS:
        return
    if t in _PLAIN_COLLECTIONS:
        for x in value:  # type: ignore[attr-defined]
            check_plain_data(name, x, _depth=_depth + 1)
        return
    if t is dict:
        for k, x in value.items():  # type: ignore[attr-defined]
            check_plain_data(name, k, _depth=_depth + 1)
            check_plain_data(name, x, _depth=_depth + 1)
        return
    raise ValueError(
        f"{name}: expected plain data (None, bool, numbers, str, bytes and their containers), got a {t.__name__}"
    )


@dataclass(frozen=True)
class SandboxConfig:
    """Resource limits and isolation settings of the sandbox.

    Attributes:
        time_limit_s: default per-test wall-clock limit in seconds (a test may override it), finite, in
            ``(0, MAX_TIME_LIMIT_S]``; the CPU-seconds rlimit is ``ceil(time_limit_s)``.
        memory_mb: address-space rlimit (RLIMIT_AS) of each test process, MiB.
        output_limit_bytes: stdout cap per test; more output stops the test with verdict ``output_limit``.
        stderr_limit_bytes: stderr cap per test (silently truncated).
        file_size_mb: RLIMIT_FSIZE, MiB (a larger write fails with EFBIG).
        max_processes: processes each test uid may have (RLIMIT_NPROC; enforced only for a non-root uid).
        max_open_files: RLIMIT_NOFILE.
        uid: first uid of the sandbox's uid range when the caller is root: a running sandbox holds slot ``k`` (uids
            ``uid + 2k`` for the program and ``uid + 2k + 1`` for the functional-test harness, gids equal), so that
            no two concurrent sandboxes share a uid (process limits, ``kill(-1)``). Nothing else may use the range.
        max_slots: number of slots (sandboxes running at the same time on this machine; more wait for a slot).
        use_bwrap: True: require bubblewrap (raise if it does not work); False: never use it (warns); None: use it
            when it works, else fall back with a warning. The fallback needs root (for the uid drop).
        tmpfs_mb: size of the private writable ``/tmp`` tmpfs inside bubblewrap, MiB.
        binds: extra host paths (files, directories, UNIX sockets) visible read-only inside bubblewrap at the same
            path. Everything else outside the interpreter, its standard library, ``/tmp`` (private) and a few
            ``/etc`` files is invisible (an allow-list, see ``bwrap.py``).
        hidden_paths: directories covered by an empty tmpfs, for a path under a visible one (rarely needed now that
            the filesystem is an allow-list).
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
    uid: int = 62000
    max_slots: int = 64
    use_bwrap: bool | None = None
    tmpfs_mb: int = 256
    binds: tuple[str, ...] = ()
    hidden_paths: tuple[str, ...] = ()
    python: str | None = None
    runner_slack_s: float = 10.0

    def __post_init__(self) -> None:
        check_time_limit("time_limit_s", self.time_limit_s)
        for name in (
            "memory_mb",
            "output_limit_bytes",
            "stderr_limit_bytes",
            "file_size_mb",
            "max_processes",
            "max_open_files",
            "tmpfs_mb",
            "max_slots",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.uid, int) or self.uid <= 0 or self.uid + 2 * self.max_slots > 2**31:
            raise ValueError(f"uid must be unprivileged (> 0) with room for 2 * max_slots uids, got {self.uid!r}")
        if not (isinstance(self.runner_slack_s, int | float) and math.isfinite(self.runner_slack_s)) or (
            self.runner_slack_s < 0
        ):
            raise ValueError(f"runner_slack_s must be a finite number >= 0, got {self.runner_slack_s!r}")
        for name in ("binds", "hidden_paths"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(p, str) and os.path.isabs(p) for p in value):
                raise ValueError(f"{name} must be a tuple of absolute paths, got {value!r}")


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

    def __post_init__(self) -> None:
        if self.time_limit_s is not None:
            check_time_limit("time_limit_s", self.time_limit_s)

    @property
    def stdin_bytes(self) -> bytes:
        """The input as bytes."""
        return self.stdin.encode("utf-8") if isinstance(self.stdin, str) else bytes(self.stdin)


@dataclass(frozen=True)
class FunctionalTest:
    r"""A functional test: trusted test ``code`` calls the program's functions and checks what they return.

    The program and the test code run in two processes under two uids (``_harness.py``, ``_wire.py``): the program
    runs to the end of its top level, then the harness executes ``setup`` and ``code`` with the program's top-level
    names bound to proxies (names that neither ``setup`` nor the builtins define, plus ``program_names``). Arguments
    and returned values cross as plain data (None, bool, int, float, complex, str, bytes, list, tuple, dict, set,
    frozenset, and instances of classes that ``setup`` defines, such as LeetCode's ``ListNode``), rebuilt on the
    harness side from its own types; any other returned object stays a handle equal only to itself. So the checks
    (``assert f(1, 2) == 3``) compare real values outside the program's process, and nothing the program does in
    its own process can make them pass.

    Passed iff the test code runs to its end. A failed ``assert`` gives ``wrong_answer``, as does a program that
    exits with status 0 before the tests end; any other exception ``runtime_error``.

    Attributes:
        code: the test code (typically defines ``check(candidate)`` and calls ``check(Solution().f)``).
        time_limit_s: per-test wall-clock limit, or None for the config's default.
        setup: trusted code run first in the harness (imports, helpers, data classes); for LeetCode the dataset's
            prompt, which the program also starts with.
        program_names: names always taken from the program even when ``setup`` defines them (the entry point when
            ``setup`` holds its stub, as with HumanEval's prompt).
        values: names bound to plain data (see :func:`check_plain_data`) in the test code's namespace, after the
            setup and the program's names: how untrusted test *data* (a judge's arguments and expected value) reaches
            trusted test ``code`` without ever becoming code itself. Sent in the wire format and decoded strictly.
    """

    __test__ = False

    code: str
    time_limit_s: float | None = None
    setup: str = ""
    program_names: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not isinstance(self.setup, str):
            raise ValueError("FunctionalTest code and setup must be str")
        if self.time_limit_s is not None:
            check_time_limit("time_limit_s", self.time_limit_s)
        if isinstance(self.program_names, str) or not all(n.isidentifier() for n in self.program_names):
            raise ValueError(f"program_names must be a tuple of identifiers, got {self.program_names!r}")
        if not isinstance(self.values, Mapping) or not all(
            isinstance(n, str) and n.isidentifier() for n in self.values
        ):
            raise ValueError(f"values must be a mapping from identifiers to plain data, got {self.values!r}"[:300])
        for n, v in self.values.items():
            check_plain_data(f"values[{n!r}]", v)


SandboxTest = StdinTest | FunctionalTest
