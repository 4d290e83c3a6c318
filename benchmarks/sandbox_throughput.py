"""Sandbox throughput figure used by the rollout benchmark."""

from __future__ import annotations

import time

from rlanything_core.sandbox.config import SandboxConfig, StdinTest
from rlanything_core.sandbox.sandbox import Sandbox

__all__ = ["sandbox_execs_per_second"]

_PROGRAM = "import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums), max(nums))\n"


def sandbox_execs_per_second(n_programs: int = 40, *, max_workers: int = 2, use_bwrap: bool | None = None) -> float:
    """Programs per second through the sandbox, each a short stdin program with 5 tests (all checked).

    Args:
        n_programs: programs to run (each in its own sandbox, all of its 5 tests in it).
        max_workers: programs run concurrently (``Sandbox.run_many``).
        use_bwrap: passed to ``SandboxConfig`` (None: bubblewrap when it works).

    Returns:
        Sandboxed program executions per second (wall clock, 5 tests each).

    Raises:
        RuntimeError: a test did not pass (the figure would be meaningless).
    """
    if n_programs < 1:
        raise ValueError(f"n_programs must be >= 1, got {n_programs!r}")
    sandbox = Sandbox(SandboxConfig(use_bwrap=use_bwrap))
    tests = [StdinTest(f"{i} {i + 1} {2 * i}\n", f"{4 * i + 1} {max(i + 1, 2 * i)}") for i in range(5)]
    jobs = [(_PROGRAM + f"# variant {k}\n", tests) for k in range(n_programs)]
    sandbox.run_many(jobs[:2], max_workers=max_workers)  # warm the page cache
    start = time.perf_counter()
    results = sandbox.run_many(jobs, max_workers=max_workers)
    elapsed = time.perf_counter() - start
    bad = [r for r in results if not r.all_passed]
    if bad:
        raise RuntimeError(f"{len(bad)} benchmark programs did not pass: {bad[0].verdicts} {bad[0].error}")
    return n_programs / elapsed
