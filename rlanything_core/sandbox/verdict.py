"""Verdicts and result records of sandboxed program runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["ProgramResult", "TestResult", "Verdict"]


class Verdict(str, Enum):
    """Outcome of one test of one program (the values are the strings written to JSON)."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    RUNTIME_ERROR = "runtime_error"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True)
class TestResult:
    """One test's outcome.

    Attributes:
        verdict: the verdict.
        exit_code: process exit status; negative values are the killing signal (``-9`` SIGKILL, ``-24`` SIGXCPU);
            ``None`` when the process never ran or the runner was lost.
        stdout: captured standard output (UTF-8, undecodable bytes replaced), at most ``output_limit`` bytes; for
            functional tests the harness's completion line is removed.
        stderr: captured standard error, truncated to the configured stderr limit.
        wall_s: wall-clock seconds of the test process.
        detail: a short human-readable reason (empty when passed).
    """

    __test__ = False  # not a pytest class

    verdict: Verdict
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float
    detail: str = ""

    @property
    def passed(self) -> bool:
        """Whether the verdict is ``passed``."""
        return self.verdict is Verdict.PASSED

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (the verdict as its string value)."""
        return {
            "verdict": self.verdict.value,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "wall_s": self.wall_s,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ProgramResult:
    """All tests of one program, run in one sandboxed process tree.

    Attributes:
        tests: per-test results, in the order of the tests given.
        bwrap: whether bubblewrap isolation (no network, read-only filesystem, private pid namespace) was in effect.
            ``False`` means the weaker fallback ran (rlimits, uid and process-group kill only); a warning was issued.
        wall_s: wall-clock seconds of the whole sandboxed run, start-up included.
        error: a sandbox-level failure message (empty when the runner worked).
    """

    tests: list[TestResult] = field(default_factory=list)
    bwrap: bool = False
    wall_s: float = 0.0
    error: str = ""

    @property
    def verdicts(self) -> list[Verdict]:
        """Per-test verdicts."""
        return [t.verdict for t in self.tests]

    @property
    def num_passed(self) -> int:
        """Number of passed tests."""
        return sum(t.passed for t in self.tests)

    @property
    def pass_fraction(self) -> float:
        """Passed tests / tests (0.0 for a program with no tests)."""
        return self.num_passed / len(self.tests) if self.tests else 0.0

    @property
    def all_passed(self) -> bool:
        """True iff there is at least one test and every test passed."""
        return bool(self.tests) and self.num_passed == len(self.tests)

    @property
    def verdict(self) -> Verdict:
        """``passed`` if all tests passed, else the first non-passed verdict (``sandbox_error`` without tests)."""
        for t in self.tests:
            if not t.passed:
                return t.verdict
        return Verdict.PASSED if self.tests else Verdict.SANDBOX_ERROR

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "verdict": self.verdict.value,
            "pass_fraction": self.pass_fraction,
            "bwrap": self.bwrap,
            "wall_s": self.wall_s,
            "error": self.error,
            "tests": [t.to_dict() for t in self.tests],
        }
