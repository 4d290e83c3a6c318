"""Judge-written call-style tests are data: parsed as literals, called by the harness itself.

On f113c84 ``functional_test_pass_matrix`` pasted the judge's text into ``assert (EP)(CALL) == (EXP)`` and ran it in
the harness: pasted that way, each injection below made both wrong programs pass (``read_source`` the one holding the
mark). Now every one is refused before anything runs, counted as a format failure, and fails every program.
"""

from __future__ import annotations

import pytest

from rlanything_core.collect.coding import GeneratedTest
from rlanything_core.envs.coding.problem import CodingProblem, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.coding_evaluation import functional_test_calls, functional_test_pass_matrix
from rlanything_core.sandbox import FunctionalTest, Sandbox, SandboxConfig, Verdict
from rlanything_core.sandbox.literal_call import LiteralCall, literal_call_test, parse_literal_call

GOOD = "class Solution:\n    def twice(self, x, y=0):\n        return x * 2 + y\n"
WRONG = "class Solution:\n    def twice(self, x, y=0):\n        return -12345\n"
# A wrong program that would also see whether its source could be read by the tests.
SECRET = "class Solution:\n    SECRET_MARK = 1\n    def twice(self, x, y=0):\n        return -1\n"

INJECTIONS = {
    # the attack found: closes the comparison's parenthesis and ORs in True
    "or_true": ("x = 1", "[0]) or (True"),
    # skips the call: `assert (EP)(1) if False else (1) == (1)` never calls the program
    "skip_call": ("1) if False else (1", "1"),
    # reports a pass through the harness's own report function (a local of the frame that exec'd the tests)
    "harness_report": ("1", "0) or __import__('sys')._getframe(1).f_locals['report']('passed', '') or (0"),
    # the same from an argument, evaluated before the program is called
    "report_in_argument": ("x = 1, y = __import__('sys')._getframe(1).f_locals['report']('passed', '')", "2"),
    # reads the program's source (prog.py in the harness's working directory) and passes when it finds a mark
    "read_source": ("1", "0) or 'SECRET_MARK' in open('prog.py').read() or (0"),
    # a statement after the assert
    "statement": ("x = 1", "0) or True\nx = (0"),
}


@pytest.fixture(scope="module")
def task() -> CodingTask:
    problem = CodingProblem(
        id="unit/twice",
        source="livecodebench",
        prompt="Return 2 * x + y.",
        test_type=TestType.FUNCTIONAL,
        check_code="assert Solution().twice(1) == 2",
        entry_point="Solution().twice",
        time_limit_s=2.0,
    )
    return CodingTask(problem, Sandbox(SandboxConfig(time_limit_s=2.0, memory_mb=512)))


def _tests(*pairs: tuple[str, str]) -> list[GeneratedTest]:
    return [GeneratedTest("unit/twice", 0, [], [], [], f"{c} -> {e}", (c, e)) for c, e in pairs]


def test_parse_keyword_and_positional_literals() -> None:
    assert parse_literal_call("nums = [1, 2], k = 3", "[3, 4]") == LiteralCall((), {"nums": [1, 2], "k": 3}, [3, 4])
    assert parse_literal_call(" [1, (2, 3)], -4.5 ", " {'a': None} ") == LiteralCall(
        ([1, (2, 3)], -4.5), {}, {"a": None}
    )
    assert parse_literal_call("", "True") == LiteralCall((), {}, True)
    assert parse_literal_call("s = 'a)b'  # a comment", "b'x'") == LiteralCall((), {"s": "a)b"}, b"x")


@pytest.mark.parametrize(
    ("call", "expected", "what"),
    [
        ("1), (2", "0", "single argument list"),
        ("1)(2", "0", "single argument list"),
        ("*[1, 2]", "0", "starred"),
        ("**{'x': 1}", "0", "`**`"),
        ("x = y", "0", "argument 'x'"),
        ("len([1])", "1", "argument 0"),
        ("x = 1, x = 2", "0", "literal arguments"),
        ("1", "{[1]: 2}", "expected value"),
        ("1", "2 + 3", "expected value"),
        ("1", "[" * 5000 + "]" * 5000, "expected value"),
        ("1" * 200_001, "0", "longer than"),
    ],
)
def test_parse_refuses_anything_but_literals(call: str, expected: str, what: str) -> None:
    with pytest.raises(ValueError, match="not|starred|longer than") as info:
        parse_literal_call(call, expected)
    assert what in str(info.value)


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_injection_is_a_format_failure_and_fails_every_program(task: CodingTask, name: str) -> None:
    """Old behaviour: the text became harness code; every wrong program passed (or the source was globbed)."""
    tests = _tests(INJECTIONS[name])
    assert functional_test_calls(tests) == [None]
    matrix = functional_test_pass_matrix(task, [WRONG, SECRET, GOOD], tests)
    assert matrix.tolist() == [[False], [False], [False]]


def test_literal_tests_separate_good_from_wrong(task: CodingTask) -> None:
    tests = _tests(("x = 3", "6"), ("4, y = 1", "9"), ("x = 1", "[0]) or (True"), ("x = 2", "5"))
    matrix = functional_test_pass_matrix(task, [GOOD, WRONG, None], tests)
    assert matrix.tolist() == [[True, True, False, False], [False, False, False, False], [False] * 4]
    assert [c is not None for c in functional_test_calls(tests)] == [True, True, False, True]


def test_program_cannot_answer_with_an_always_equal_object(task: CodingTask) -> None:
    cheat = (
        "class Eq:\n    def __eq__(self, o):\n        return True\n"
        "class Solution:\n    def twice(self, x, y=0):\n        return Eq()\n"
    )
    assert functional_test_pass_matrix(task, [cheat], _tests(("x = 3", "6"))).tolist() == [[False]]


def test_values_reach_the_harness_as_data_not_code() -> None:
    sandbox = Sandbox(SandboxConfig(time_limit_s=2.0, memory_mb=512))
    text = "__import__('os')._exit(0)"
    check = literal_call_test("echo", LiteralCall((text,), {}, text))
    assert check.values["__rla_args__"] == [text]
    result = sandbox.run("def echo(s):\n    return s\n", [check])
    assert result.verdicts == [Verdict.PASSED]
    result = sandbox.run("def echo(s):\n    return s + '!'\n", [check])
    assert result.verdicts == [Verdict.WRONG_ANSWER]


def test_functional_test_values_must_be_plain_data() -> None:
    with pytest.raises(ValueError, match=r"values\['v'\].*plain data.*function"):
        FunctionalTest("pass", values={"v": print})
    with pytest.raises(ValueError, match="identifiers"):
        FunctionalTest("pass", values={"not a name": 1})
    with pytest.raises(ValueError, match="entry_point"):
        literal_call_test("f(", LiteralCall())
