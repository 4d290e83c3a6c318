"""Single-turn coding task: problem -> program text -> per-test verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlanything_core.envs.coding.extract import extract_code
from rlanything_core.envs.coding.problem import CodingProblem
from rlanything_core.sandbox import ProgramResult, Sandbox, SandboxTest, TestResult, Verdict

__all__ = ["CodingTask", "ResponseResult"]


@dataclass(frozen=True)
class ResponseResult:
    """Outcome of one model response.

    Attributes:
        program: the extracted program, or None when no code could be extracted (bad model output: every test
            then gets ``wrong_answer`` without running anything).
        result: the sandbox result (one verdict per test).
    """

    program: str | None
    result: ProgramResult

    @property
    def pass_fraction(self) -> float:
        """Passed tests / tests."""
        return self.result.pass_fraction


class CodingTask:
    """One coding problem as a single-turn task: ``evaluate(program) -> ProgramResult``.

    Args:
        problem: the problem.
        sandbox: the sandbox to run in (a default ``Sandbox()`` when None).
        max_tests: use only the first ``max_tests`` stdin tests (the reference uses 8), None for all.
    """

    def __init__(self, problem: CodingProblem, sandbox: Sandbox | None = None, *, max_tests: int | None = None) -> None:
        self.problem = problem
        self.sandbox = sandbox or Sandbox()
        self.tests: list[SandboxTest] = problem.sandbox_tests(max_tests=max_tests)
        self.judge = problem.judge()

    @property
    def prompt(self) -> str:
        """The statement shown to the model."""
        return self.problem.prompt

    def evaluate(self, program: str) -> ProgramResult:
        """Run a candidate program (the preamble is prepended for functional problems) on every test."""
        return self.sandbox.run(self.problem.full_program(program), self.tests, judge=self.judge)

    def evaluate_many(self, programs: Sequence[str], *, max_workers: int = 2) -> list[ProgramResult]:
        """Evaluate several candidate programs concurrently."""
        jobs = [(self.problem.full_program(p), self.tests) for p in programs]
        return self.sandbox.run_many(jobs, judge=self.judge, max_workers=max_workers)

    def evaluate_response(self, response: str) -> ResponseResult:
        """Extract the program from a model response (``extract_code``) and evaluate it."""
        program = extract_code(response)
        if program is None:
            failed = TestResult(Verdict.WRONG_ANSWER, None, "", "", 0.0, "no program found in the response")
            return ResponseResult(None, ProgramResult(tests=[failed] * len(self.tests), bwrap=self.sandbox.bwrap))
        return ResponseResult(program, self.evaluate(program))
