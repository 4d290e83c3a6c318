"""Turn one raw runner record into a verdict (a pure function of the record)."""

from __future__ import annotations

import base64
import signal

from rlanything_core.sandbox.compare import OutputJudge
from rlanything_core.sandbox.config import FunctionalTest, SandboxTest
from rlanything_core.sandbox.verdict import TestResult, Verdict

__all__ = ["classify"]

_SIGXCPU = int(signal.SIGXCPU)


def _decode(b64: str) -> str:
    return base64.b64decode(b64).decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _is_memory(text: str) -> bool:
    return "MemoryError" in text or "Cannot allocate memory" in text or "bad_alloc" in text


_OUTCOMES = ("passed", "failed", "error", "program_gone", "protocol")


def _harness_report(raw: dict[str, object]) -> dict[str, str] | None:
    """The harness's ``<outcome>\\n<detail>`` report, or None when it gave none."""
    outcome, _, detail = str(raw.get("report") or "").partition("\n")
    return {"outcome": outcome, "detail": detail} if outcome in _OUTCOMES else None


def classify(raw: dict[str, object], test: SandboxTest, *, judge: OutputJudge) -> TestResult:
    """The verdict of one test.

    Functional tests pass only on the harness's ``passed`` report (the harness runs apart from the program and is
    the only writer of that channel); stdin tests pass when the exit status is 0 and ``judge`` accepts the stdout.

    Args:
        raw: the runner's record (``status``, ``exit_code``, ``stdout_b64``, ``stderr_b64``, ``wall_s``, ``error``,
            ``report``).
        test: the test it belongs to.
        judge: output comparison settings (stdin tests).

    Returns:
        The test result.
    """
    status = str(raw["status"])
    code = raw["exit_code"] if isinstance(raw["exit_code"], int) else None
    stdout = _decode(str(raw["stdout_b64"]))
    stderr = _decode(str(raw["stderr_b64"]))
    wall = float(raw["wall_s"])  # type: ignore[arg-type]

    def result(verdict: Verdict, detail: str = "") -> TestResult:
        return TestResult(verdict=verdict, exit_code=code, stdout=stdout, stderr=stderr, wall_s=wall, detail=detail)

    if status == "spawn_error":
        return result(Verdict.SANDBOX_ERROR, f"could not start the test process: {raw.get('error', '')}")
    if status == "output_limit":
        return result(Verdict.OUTPUT_LIMIT, "stdout exceeded output_limit_bytes")
    if status == "timeout":
        return result(Verdict.TIMEOUT, "wall-clock limit exceeded")
    if code == -_SIGXCPU:
        return result(Verdict.TIMEOUT, "CPU-time limit exceeded (SIGXCPU)")
    last = _last_line(stderr)
    if isinstance(test, FunctionalTest):
        report = _harness_report(raw)
        if report is None:
            return result(Verdict.RUNTIME_ERROR, "the test harness gave no report")
        outcome, detail = report["outcome"], report["detail"]
        if outcome == "passed":
            return result(Verdict.PASSED)
        if outcome == "program_gone":
            if code == 0:
                return result(Verdict.WRONG_ANSWER, "exited 0 before the end of the tests")
            if _is_memory(last):
                return result(Verdict.MEMORY, last)
            return result(Verdict.RUNTIME_ERROR, last or f"{detail} (exit status {code})")
        if outcome in ("failed", "protocol"):
            return result(Verdict.WRONG_ANSWER, detail)
        return result(Verdict.MEMORY if _is_memory(detail) else Verdict.RUNTIME_ERROR, detail)
    if code != 0 and _is_memory(last) or (code != 0 and "Cannot allocate memory" in stderr):
        return result(Verdict.MEMORY, last)
    if code != 0:
        return result(Verdict.RUNTIME_ERROR, last or f"exit status {code}")
    if test.expected is None or judge(stdout, test.expected):
        return result(Verdict.PASSED)
    return result(Verdict.WRONG_ANSWER, "output differs from the expected output")
