"""LLM coding rewriter: a new problem with new tests, anchored to the root problem (Open-AgentRL's env rollout).

The prompt follows the authors' semantics (dataset curator; JSON only; goal HARDER/EASIER; "CRITICAL ANCHOR: stay
close to the ORIGINAL (root, version 0) problem"; root and current problem with their tests; per-test pass rates as
critic feedback). Unlike the authors' code the output is not trusted (a weak point of Open-AgentRL):

* the last brace-matched JSON object is parsed; types, sizes and ``>= min_tests`` equal-length test lists checked;
* the tests are executed in the sandbox against a program: the JSON's own ``solution`` (the prompt asks for one: a
  reference solution of the root problem does not solve a *rewritten* problem), which must pass every test.
  Without a program the candidate is rejected (``NO_SOLUTION``) unless ``require_solution=False``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rlanything_core.adaptation.feedback import render_feedback
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec, _rejected

if TYPE_CHECKING:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.feedback import TaskFeedback
    from rlanything_core.adaptation.llm import ChatModel
    from rlanything_core.envs.coding.problem import CodingProblem

__all__ = [
    "CodingLimits",
    "CodingRewriter",
    "SandboxTestRunner",
    "TestRunner",
    "coding_chat",
    "last_json_object",
    "task_from_problem",
    "validate_payload",
]


class TestRunner(Protocol):
    """Runs one stdin/stdout program on tests; one pass flag per test."""

    def passes(self, program: str, inputs: Sequence[str], outputs: Sequence[str], *, time_limit_s: float) -> list[bool]:
        """Whether ``program`` prints ``outputs[k]`` on ``inputs[k]`` for each ``k``."""
        ...


@dataclass
class SandboxTestRunner:
    """``TestRunner`` over ``rlanything_core.sandbox.Sandbox`` (bubblewrap + rlimits; never in-process)."""

    sandbox: Any = None

    def passes(self, program: str, inputs: Sequence[str], outputs: Sequence[str], *, time_limit_s: float) -> list[bool]:
        """Run in the sandbox; a sandbox-level failure counts as every test failing."""
        from rlanything_core.sandbox import Sandbox, StdinTest

        if self.sandbox is None:
            self.sandbox = Sandbox()
        tests = [StdinTest(stdin=i, expected=o, time_limit_s=time_limit_s) for i, o in zip(inputs, outputs)]
        result = self.sandbox.run(program, tests)
        return [t.passed for t in result.tests]


@dataclass(frozen=True)
class CodingLimits:
    """Size limits of a rewritten problem (characters / counts)."""

    min_tests: int = 4
    max_tests: int = 16
    max_question_chars: int = 6000
    max_test_chars: int = 2000
    max_solution_chars: int = 12000
    max_prompt_test_chars: int = 100
    """Tests longer than this are left out of the prompt (as the authors)."""


def last_json_object(text: str) -> Any:
    """The last complete ``{...}`` object in ``text`` (string-aware brace matching), parsed; ``None`` if absent.

    Examples:
        >>> last_json_object('noise {"a": 1} more {"b": "}"} tail')
        {'b': '}'}
        >>> last_json_object('{"a": [1, 2') is None
        True
    """
    spans: list[tuple[int, int]] = []
    depth, in_str, esc, start = 0, False, False, 0
    for j, ch in enumerate(text):
        if depth and in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif depth and ch == '"':
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = j
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, j))
    for begin, end in reversed(spans):
        try:
            return json.loads(text[begin : end + 1])
        except (json.JSONDecodeError, RecursionError):
            continue
    return None


def validate_payload(payload: Any, limits: CodingLimits) -> tuple[dict[str, Any] | None, RejectReason | None, str]:
    """Check the parsed JSON: fields, types, sizes, test counts. Returns ``(clean data, None, "")`` or a reason."""
    if payload is None:
        return None, RejectReason.UNPARSEABLE, "no complete JSON object in the output"
    if not isinstance(payload, dict):
        return None, RejectReason.WRONG_TYPES, f"expected a JSON object, got {type(payload).__name__}"
    question, ins, outs = payload.get("question"), payload.get("test_input"), payload.get("test_output")
    solution = payload.get("solution")
    if not isinstance(question, str) or not question.strip():
        return None, RejectReason.WRONG_TYPES, "question must be a non-empty string"
    if not (isinstance(ins, list) and isinstance(outs, list)):
        return None, RejectReason.WRONG_TYPES, "test_input and test_output must be lists"
    if not all(isinstance(x, str) for x in (*ins, *outs)):
        return None, RejectReason.WRONG_TYPES, "every test input/output must be a string"
    if solution is not None and not isinstance(solution, str):
        return None, RejectReason.WRONG_TYPES, "solution must be a string of Python code"
    if len(ins) != len(outs) or len(ins) < limits.min_tests:
        return None, RejectReason.TOO_FEW_TESTS, f"{len(ins)} inputs / {len(outs)} outputs (need >= {limits.min_tests})"
    if len(ins) > limits.max_tests:
        return None, RejectReason.TOO_LARGE, f"{len(ins)} tests > {limits.max_tests}"
    if len(question) > limits.max_question_chars or any(len(x) > limits.max_test_chars for x in (*ins, *outs)) or (
        solution is not None and len(solution) > limits.max_solution_chars
    ):
        return None, RejectReason.TOO_LARGE, "question, a test or the solution exceeds its size limit"
    data = {"question": question.strip(), "test_input": ins, "test_output": outs, "test_method": "stdio",
            "test_time_limit": 4}
    if solution:
        data["solution"] = solution
    return data, None, ""


def _tests_block(data: dict[str, Any], limits: CodingLimits) -> str:
    pairs = [(i, o) for i, o in zip(data.get("test_input", []), data.get("test_output", []))
             if len(i) <= limits.max_prompt_test_chars and len(o) <= limits.max_prompt_test_chars]
    return "\n".join(f"input: {json.dumps(i)} -> output: {json.dumps(o)}" for i, o in pairs) or "(tests too long)"


def coding_chat(root: TaskSpec, current: TaskSpec, direction: str, feedback: TaskFeedback | None,
                limits: CodingLimits) -> list[dict[str, str]]:
    """The rewrite prompt (authors' semantics, plus a request for a reference ``solution``)."""
    system = ("You are a coding dataset curator. Return ONLY a JSON object {\"question\": str, \"test_method\": "
              f"\"stdio\", \"test_time_limit\": 4, \"test_input\": [str], \"test_output\": [str], \"solution\": str}} "
              f"with at least {limits.min_tests} tests (equal-length lists). `solution` is a Python program reading "
              "stdin with input() and printing with print() that passes every test.")
    user = "\n".join([
        f"Goal: make the problem {direction.upper()} for the current policy.",
        "CRITICAL ANCHOR: stay close to the ORIGINAL (root, version 0) problem.",
        "### Original problem", root.data.get("question", ""), "Original tests:", _tests_block(root.data, limits),
        f"### Current problem (version {current.version})", current.data.get("question", ""),
        "Current tests:", _tests_block(current.data, limits),
        "### Critic feedback (may not be accurate)", render_feedback(feedback),
    ])
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def task_from_problem(problem: CodingProblem, *, max_tests: int = 8) -> TaskSpec:
    """A root coding task (version 0) from a stdin ``CodingProblem`` (its first ``max_tests`` tests).

    Raises:
        ValueError: ``problem`` is not a stdin problem with at least one test.
    """
    if problem.test_type.value != "stdin" or not problem.tests:
        raise ValueError(f"problem: expected a stdin problem with tests, got {problem.id} ({problem.test_type.value})")
    tests = problem.tests[:max_tests]
    return TaskSpec(task_id=problem.id, kind="coding", root_id=problem.id, data={
        "question": problem.prompt, "test_input": [t.input for t in tests], "test_output": [t.output for t in tests],
        "test_method": "stdio", "test_time_limit": float(problem.time_limit_s or 4)})


@dataclass
class CodingRewriter:
    """Ask the LLM for ``samples`` rewrites; validate the JSON and run the tests in the sandbox.

    Args:
        chat_model: the environment LLM.
        roots: root task per ``root_id`` (the anchor); a task missing here is its own root.
        runner: executes candidate solutions (``SandboxTestRunner()`` by default).
        samples: LLM samples per request (the authors used 3).
        require_solution: reject candidates that carry no solution program (``NO_SOLUTION``).
        limits: size limits.
        seed: base sampling seed.
    """

    chat_model: ChatModel
    roots: dict[str, TaskSpec] = field(default_factory=dict)
    runner: TestRunner | None = None
    samples: int = 3
    require_solution: bool = True
    limits: CodingLimits = field(default_factory=CodingLimits)
    seed: int = 0
    name: str = "coding_llm"

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples: expected >= 1, got {self.samples}")
        self._requests = 0

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Return one candidate per sample (valid or rejected with the reason and the raw output)."""
        d = direction.value
        chat = coding_chat(self.roots.get(task.root_id, task), task, d, feedback, self.limits)
        replies = self.chat_model.complete([chat] * self.samples, seed=self.seed + self._requests)
        self._requests += 1
        prompt = chat[-1]["content"]
        out: list[Candidate] = []
        seen: set[str] = set()
        for i, raw in enumerate(replies):
            extra = {"prompt": prompt, "raw_output": raw}
            data, reason, detail = validate_payload(last_json_object(raw), self.limits)
            if data is None:
                out.append(_rejected(None, task, d, self.name, reason or RejectReason.UNPARSEABLE, detail, **extra))
                continue
            version = task.version + 1
            new = TaskSpec(task_id=f"{task.root_id}@v{version}-s{self._requests - 1}.{i}", kind="coding",
                           root_id=task.root_id, version=version, data=data)
            key = json.dumps([data["question"], data["test_input"], data["test_output"]])
            if data["question"] == task.data.get("question") and data["test_input"] == task.data.get("test_input"):
                out.append(_rejected(new, task, d, self.name, RejectReason.NO_CHANGE, "same question and tests",
                                     **extra))
                continue
            if key in seen:
                out.append(_rejected(new, task, d, self.name, RejectReason.DUPLICATE, "repeated sample", **extra))
                continue
            seen.add(key)
            solution = data.get("solution")
            if not solution:
                if self.require_solution:
                    out.append(_rejected(new, task, d, self.name, RejectReason.NO_SOLUTION,
                                         "no solution program to check the tests", **extra))
                    continue
                out.append(Candidate(new, task.task_id, task.root_id, d, self.name, valid=True, prompt=prompt,
                                     raw_output=raw, info={"tests_verified": False}))
                continue
            runner = self.runner or SandboxTestRunner()
            self.runner = runner
            flags = runner.passes(solution, data["test_input"], data["test_output"], time_limit_s=4.0)
            if not all(flags) or len(flags) != len(data["test_input"]):
                out.append(_rejected(new, task, d, self.name, RejectReason.TESTS_INCONSISTENT,
                                     f"solution passes {sum(flags)}/{len(data['test_input'])} of its tests", **extra,
                                     info={"solution_passes": flags}))
                continue
            out.append(Candidate(new, task.task_id, task.root_id, d, self.name, valid=True, prompt=prompt,
                                 raw_output=raw, info={"tests_verified": True}))
        return out
