"""The coding problem record shared by every loader."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from rlanything_core.sandbox import FunctionalTest, OutputJudge, SandboxTest, StdinTest

__all__ = ["CodingProblem", "IOTest", "TestType"]


class TestType(str, Enum):
    """How a problem's tests run."""

    __test__ = False

    FUNCTIONAL = "functional"
    STDIN = "stdin"


@dataclass(frozen=True)
class IOTest:
    """One stdin/stdout test.

    Attributes:
        input: text fed to stdin.
        output: expected stdout.
        name: the source's test name (for example ``subtask1/1``), may be empty.
        time_limit_s: this test's limit, or None for the problem's.
        points: the source's score for this test, or None.
    """

    __test__ = False

    input: str
    output: str
    name: str = ""
    time_limit_s: float | None = None
    points: float | None = None


@dataclass(frozen=True)
class CodingProblem:
    r"""A coding problem with its tests.

    Functional problems run ``preamble + "\n\n" + program``, then ``check_code`` (which must raise on a failure) in
    a separate harness process after ``check_setup`` (default: the preamble); LeetCode's scoring is
    ``prompt + code + test + "check(" + entry_point + ")"``, i.e. ``preamble`` = the dataset's ``prompt`` and
    ``check_code`` = ``test + "\ncheck(" + entry_point + ")"``. Stdin problems run the
    program on each ``tests[i].input`` and compare its stdout with ``tests[i].output``.

    Attributes:
        id: unique id (for example ``leetcode/two-sum``, ``kickstart/2013/practice_round/bad_horse``).
        source: dataset name (``leetcode``, ``kickstart``, ``codecontests``, ``humaneval``, ``livecodebench``,
            ``livebench``).
        prompt: the statement shown to the model.
        test_type: functional or stdin.
        tests: stdin tests (the hidden/judge tests), empty for functional problems.
        check_code: functional test code, appended after the program.
        preamble: code placed before the program (imports and helpers), functional problems.
        time_limit_s: default per-test wall-clock limit.
        float_tolerance: absolute and relative tolerance of numeric tokens, or None (exact tokens).
        case_sensitive: whether output letters must match in case.
        starter_code: the signature stub given to the model, may be empty.
        entry_point: the function the tests call (functional), may be empty.
        difficulty: the source's difficulty label, or None.
        also_in_lcb_v5_window: LeetCode problems also in LiveCodeBench's Aug-2024 to Jan-2025 window.
        sample_tests: public examples (not used for scoring unless asked).
        metadata: other source fields worth keeping (date, tags, names).
        check_setup: trusted code the functional test harness runs before ``check_code`` (its helpers and data
            classes), or None for ``preamble``. The program's own definitions never replace these (see
            ``FunctionalTest``).
        check_program_names: names the harness always takes from the program even when ``check_setup`` defines
            them (HumanEval: the entry point, whose stub is in the prompt).
    """

    id: str
    source: str
    prompt: str
    test_type: TestType
    tests: tuple[IOTest, ...] = ()
    check_code: str = ""
    preamble: str = ""
    time_limit_s: float = 4.0
    float_tolerance: float | None = None
    case_sensitive: bool = True
    starter_code: str = ""
    entry_point: str = ""
    difficulty: str | None = None
    also_in_lcb_v5_window: bool = False
    sample_tests: tuple[IOTest, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    check_setup: str | None = None
    check_program_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.test_type, TestType):
            raise ValueError(f"test_type must be a TestType, got {self.test_type!r}")
        if self.test_type is TestType.FUNCTIONAL and not self.check_code.strip():
            raise ValueError(f"problem {self.id!r}: functional problems need non-empty check_code")
        if self.test_type is TestType.STDIN and not self.tests:
            raise ValueError(f"problem {self.id!r}: stdin problems need at least one test")
        if not self.time_limit_s > 0:
            raise ValueError(f"problem {self.id!r}: time_limit_s must be > 0, got {self.time_limit_s!r}")

    @property
    def num_tests(self) -> int:
        """Number of sandbox tests (1 for a functional problem: its check function)."""
        return 1 if self.test_type is TestType.FUNCTIONAL else len(self.tests)

    def judge(self) -> OutputJudge:
        """The output comparison of this problem."""
        return OutputJudge(
            abs_tol=self.float_tolerance, rel_tol=self.float_tolerance, case_sensitive=self.case_sensitive
        )

    @property
    def harness_setup(self) -> str:
        """The trusted code run before the functional tests (``check_setup``, else ``preamble``)."""
        return self.preamble if self.check_setup is None else self.check_setup

    def full_program(self, program: str) -> str:
        """The text the sandbox runs for a candidate ``program`` (the preamble prepended when there is one)."""
        return f"{self.preamble}\n\n{program}" if self.preamble else program

    def sandbox_tests(self, *, max_tests: int | None = None, samples: bool = False) -> list[SandboxTest]:
        """The sandbox tests of this problem.

        Args:
            max_tests: keep the first ``max_tests`` stdin tests (None: all).
            samples: use the public sample tests instead of the judge tests.
        """
        if self.test_type is TestType.FUNCTIONAL:
            return [FunctionalTest(self.check_code, self.time_limit_s, self.harness_setup, self.check_program_names)]
        tests = self.sample_tests if samples else self.tests
        if max_tests is not None:
            if max_tests < 1:
                raise ValueError(f"max_tests must be >= 1 or None, got {max_tests!r}")
            tests = tests[:max_tests]
        return [StdinTest(t.input, t.output, t.time_limit_s or self.time_limit_s) for t in tests]
