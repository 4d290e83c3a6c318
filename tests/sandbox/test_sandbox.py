"""Verdicts, comparison, functional tests, concurrency and CLI of the sandbox (its throughput: tests/benchmarks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.sandbox import (
    FunctionalTest,
    OutputJudge,
    Sandbox,
    SandboxConfig,
    StdinTest,
    Verdict,
    outputs_match,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(time_limit_s=2.0, memory_mb=512, output_limit_bytes=1 << 16))


def test_verdict_values_are_exact() -> None:
    assert {v.value for v in Verdict} == {
        "passed",
        "wrong_answer",
        "timeout",
        "runtime_error",
        "memory",
        "output_limit",
        "sandbox_error",
    }


def test_every_verdict_in_one_run(sandbox: Sandbox) -> None:
    prog = (
        "import sys, time\ncmd = sys.stdin.readline().strip()\n"
        "if cmd == 'loop':\n    while True: pass\n"
        "if cmd == 'crash':\n    raise KeyError(cmd)\n"
        "if cmd == 'mem':\n    x = bytearray(2**31)\n"
        "if cmd == 'spam':\n    sys.stdout.write('y' * (1 << 20))\n"
        "print(cmd.upper())\n"
    )
    tests = [
        StdinTest("ok\n", "OK"),
        StdinTest("ok\n", "no"),
        StdinTest("loop\n", "x", time_limit_s=0.5),
        StdinTest("crash\n", "x"),
        StdinTest("mem\n", "x"),
        StdinTest("spam\n", "x"),
    ]
    result = sandbox.run(prog, tests)
    assert result.verdicts == [
        Verdict.PASSED,
        Verdict.WRONG_ANSWER,
        Verdict.TIMEOUT,
        Verdict.RUNTIME_ERROR,
        Verdict.MEMORY,
        Verdict.OUTPUT_LIMIT,
    ]
    assert result.pass_fraction == pytest.approx(1 / 6) and not result.all_passed
    assert result.verdict is Verdict.WRONG_ANSWER
    assert "KeyError" in result.tests[3].stderr


def test_sandbox_error_when_interpreter_cannot_start() -> None:
    sb = Sandbox(SandboxConfig(python="/bin/true"))  # runs, but is not python: exit 0 and no output
    assert sb.run("print(1)", [StdinTest("", "1")]).verdicts == [Verdict.WRONG_ANSWER]
    missing = Sandbox.__new__(Sandbox)
    missing.__dict__.update(sb.__dict__)
    missing.python = "/nonexistent/python"
    result = missing.run("print(1)", [StdinTest("", "1")])
    assert result.verdicts == [Verdict.SANDBOX_ERROR] and "could not start" in result.tests[0].detail


def test_functional_tests(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    return a + b\n"
    tests = [
        FunctionalTest("def check(f):\n    assert f(1, 2) == 3\ncheck(add)"),
        FunctionalTest("def check(f):\n    assert f(1, 2) == 4\ncheck(add)"),
        FunctionalTest("check(add)"),  # NameError
    ]
    assert sandbox.run(prog, tests).verdicts == [Verdict.PASSED, Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR]


@pytest.mark.parametrize("escape", ["import sys\nsys.exit(0)", "import os\nos._exit(0)"])
def test_functional_early_exit_does_not_pass(sandbox: Sandbox, escape: str) -> None:
    prog = f"def add(a, b):\n    return 0\n{escape}\n"
    result = sandbox.run(prog, [FunctionalTest("assert add(1, 2) == 3")])
    assert result.verdicts == [Verdict.WRONG_ANSWER]


def test_float_tolerance_and_case(sandbox: Sandbox) -> None:
    prog = "print('Case #1:', 1/3)\n"
    tests = [StdinTest("", "case #1: 0.333333"), StdinTest("", "Case #1: 0.3334")]
    kattis = OutputJudge.kattis(1e-6)
    assert sandbox.run(prog, tests, judge=kattis).verdicts == [Verdict.PASSED, Verdict.WRONG_ANSWER]
    assert sandbox.run(prog, tests[:1]).verdicts == [Verdict.WRONG_ANSWER]


def test_outputs_match_rules() -> None:
    assert outputs_match("1  2\n3\n", " 1 2 3 ")
    assert not outputs_match("1 2", "1 2 3")
    assert outputs_match("1.0000001", "1", abs_tol=1e-6)
    assert not outputs_match("1.01", "1", abs_tol=1e-6)
    assert outputs_match("1000001", "1000000", rel_tol=1e-6)
    assert not outputs_match("abc", "1", abs_tol=1.0)
    assert not outputs_match("nan", "1", abs_tol=1.0)
    assert outputs_match("YES", "yes", case_sensitive=False)
    with pytest.raises(ValueError, match="abs_tol"):
        outputs_match("1", "1", abs_tol=-1.0)


@given(st.lists(st.text(alphabet="ab 1.\n\t", max_size=8), max_size=5))
def test_exact_rule_equals_reference(parts: list[str]) -> None:
    a = " ".join(parts)
    b = "\n".join(parts)
    ref = " ".join(a.split()) == " ".join(b.split())
    assert outputs_match(a, b) == ref


def test_run_many_keeps_order(sandbox: Sandbox) -> None:
    jobs = [(f"print({k} * int(input()))", [StdinTest("2\n", str(2 * k))]) for k in range(6)]
    results = sandbox.run_many(jobs, max_workers=2)
    assert [r.verdicts for r in results] == [[Verdict.PASSED]] * 6
    with pytest.raises(ValueError, match="max_workers"):
        sandbox.run_many(jobs, max_workers=0)


def test_bad_arguments(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="tests\\[0\\]"):
        sandbox.run("print(1)", ["1"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxConfig(memory_mb=0)
    with pytest.raises(ValueError, match="uid"):
        SandboxConfig(uid=0)
    assert sandbox.run("print(1)", []).tests == []


def test_cli(tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint(sum(map(int, sys.stdin.read().split())))\n")
    stdin = tmp_path / "in.txt"
    stdin.write_bytes(b"1 2 3\n")
    expected = tmp_path / "out.txt"
    expected.write_text("6\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "rlanything_core.sandbox",
        str(prog),
        "--stdin",
        str(stdin),
        "--time-limit",
        "3",
        "--memory-mb",
        "256",
    ]
    proc = subprocess.run(cmd + ["--expected", str(expected)], capture_output=True, text=True, env=env, check=False)
    record = json.loads(proc.stdout)
    assert proc.returncode == 0 and record["verdict"] == "passed" and record["stdout"] == "6\n"
    assert {"verdict", "exit_code", "stdout", "stderr", "wall_s", "bwrap"} <= set(record)
    prog.write_text("while True: pass\n")
    proc = subprocess.run(cmd[:-4] + ["--time-limit", "0.5"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 1 and json.loads(proc.stdout)["verdict"] == "timeout"
    proc = subprocess.run(cmd[:-4] + ["--time-limit", "-1"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2 and "time_limit_s" in proc.stderr


def test_docstring_examples() -> None:
    import doctest

    import rlanything_core.envs.coding.extract as extract
    import rlanything_core.sandbox.compare as compare

    for mod in (compare, extract):
        assert doctest.testmod(mod).failed == 0


def test_functional_values_cross_as_plain_data(sandbox: Sandbox) -> None:
    prog = (
        "def echo(x):\n    return x\n"
        "def kinds(x):\n    return type(x).__name__\n"
        "def boom(x):\n    raise ValueError('negative')\n"
        "print('program output')\n"
    )
    code = (
        "values = [None, True, 3, -2**70, 1.5, float('inf'), 'é', b'\\x00\\xff', 2j, [1, (2, 3)], (4, [5]), {1, 2},\n"
        "          frozenset({3}), {'a': [1], (1, 2): {3}}, [[[]]]]\n"
        "for v in values:\n"
        "    got = echo(v)\n"
        "    assert got == v and type(got) is type(v), (v, got)\n"
        "    assert kinds(v) == type(v).__name__\n"
        "try:\n    boom(-1)\n    raise SystemExit(3)\nexcept ValueError as exc:\n    assert 'negative' in str(exc)\n"
        "print('tests may print without harm')\n"
    )
    result = sandbox.run(prog, [FunctionalTest(code)])
    assert result.verdicts == [Verdict.PASSED], result.tests[0].detail
    assert result.tests[0].stdout == "program output\n"


def test_functional_data_classes_and_objects(sandbox: Sandbox) -> None:
    setup = (
        "class ListNode:\n    def __init__(self, val=0, next=None):\n        self.val = val\n        self.next = next\n"
        "def build(vals):\n    head = None\n    for v in reversed(vals):\n        head = ListNode(v, head)\n"
        "    return head\n"
        "def values(node):\n    out = []\n    while node:\n        out.append(node.val)\n        node = node.next\n"
        "    return out\n"
    )
    prog = (
        setup + "class Solution:\n    def reverse(self, head):\n        prev = None\n        while head:\n"
        "            head.next, prev, head = prev, head, head.next\n        return prev\n"
        "    def has_cycle(self, head):\n        seen = set()\n        while head:\n"
        "            if id(head) in seen:\n                return True\n            seen.add(id(head))\n"
        "            head = head.next\n        return False\n"
        "class Counter2:\n    def __init__(self):\n        self.n = 0\n    def inc(self):\n        self.n += 1\n"
        "        return self.n\n"
    )
    code = (
        "s = Solution()\n"
        "assert values(s.reverse(build([1, 2, 3]))) == [3, 2, 1]\n"
        "assert s.reverse(None) is None\n"
        "a = build([1, 2])\na.next.next = a\n"
        "assert s.has_cycle(a) is True and s.has_cycle(build([1])) is False\n"
        "c = Counter2()\nassert c.inc() == 1 and c.inc() == 2 and c.n == 2\n"
        "assert c == c and c != s\n"
        "try:\n    bool(c)\n    raise SystemExit(3)\nexcept TypeError:\n    pass\n"
    )
    result = sandbox.run(prog, [FunctionalTest(code, setup=setup)])
    assert result.verdicts == [Verdict.PASSED], result.tests[0].detail


def test_functional_program_names_and_trusted_setup(sandbox: Sandbox) -> None:
    setup = "def helper(x):\n    return x * 10\ndef f(x):\n    '''stub'''\n"
    prog = "def helper(x):\n    return 0\ndef f(x):\n    return helper(x) + 1\n"
    passing = FunctionalTest("assert f(2) == 1 and helper(2) == 20\n", setup=setup, program_names=("f",))
    stub = FunctionalTest("assert f(2) == 1\n", setup=setup)  # f stays the setup's stub: None != 1
    assert sandbox.run(prog, [passing, stub]).verdicts == [Verdict.PASSED, Verdict.WRONG_ANSWER]
    with pytest.raises(ValueError, match="program_names"):
        FunctionalTest("pass", program_names=("not an identifier",))


@pytest.mark.parametrize(
    ("prog", "verdict", "detail"),
    [
        ("def f(x):\n    return x\nraise KeyError('top')\n", Verdict.RUNTIME_ERROR, "KeyError"),
        ("def f(x):\n    return x +\n", Verdict.RUNTIME_ERROR, "SyntaxError"),
        ("def f(x):\n    return [0] * (1 << 40)\n", Verdict.MEMORY, "MemoryError"),
        ("def f(x):\n    return lambda: 1\n", Verdict.WRONG_ANSWER, "AssertionError"),
        ("def f(x):\n    while True:\n        pass\n", Verdict.TIMEOUT, "limit"),
        ("import sys\ndef f(x):\n    sys.exit(1)\n", Verdict.RUNTIME_ERROR, ""),
    ],
)
def test_functional_failures(sandbox: Sandbox, prog: str, verdict: Verdict, detail: str) -> None:
    result = sandbox.run(prog, [FunctionalTest("assert f(1) == 1\n", time_limit_s=1.0)])
    assert result.verdicts == [verdict] and detail in result.tests[0].detail, result.tests[0].detail


def test_functional_tests_cannot_pass_program_callables(sandbox: Sandbox) -> None:
    result = sandbox.run("def apply(g, x):\n    return g(x)\n", [FunctionalTest("assert apply(abs, -1) == 1\n")])
    assert result.verdicts == [Verdict.RUNTIME_ERROR] and "plain data only" in result.tests[0].detail


def test_seccomp_filter_layout() -> None:
    from rlanything_core.sandbox._procs import seccomp_filter

    for machine in ("x86_64", "aarch64"):
        code = seccomp_filter(machine)
        assert code is not None and len(code) == 14 * 8
    assert seccomp_filter("mips") is None


def test_uid_slots_are_exclusive(tmp_path: Path) -> None:
    import threading

    from rlanything_core.sandbox.slots import UidSlots

    slots = UidSlots(70000, 2, lock_dir=tmp_path)
    with slots.acquire() as a, slots.acquire() as b:
        assert {a.program_uid, b.program_uid} == {70000, 70002} and a.harness_uid == a.program_uid + 1
        got: list[int] = []

        def wait_for_a_slot() -> None:
            with slots.acquire() as c:
                got.append(c.program_uid)

        waiter = threading.Thread(target=wait_for_a_slot)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not got  # both slots taken: the third waits
    waiter.join(5)
    assert got and got[0] in (70000, 70002)
    with pytest.raises(ValueError, match="base"):
        UidSlots(0, 1)


def test_functional_subclasses_of_plain_types_cross_as_their_plain_value(sandbox: Sandbox) -> None:
    """Honest programs returning a namedtuple, Counter or IntEnum still pass; an overridden ``__eq__`` is dropped."""
    prog = (
        "import collections, enum\n"
        "P = collections.namedtuple('P', 'x y')\n"
        "class Color(enum.IntEnum):\n    RED = 1\n"
        "class Liar(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def point():\n    return P(1, 2)\n"
        "def count(s):\n    return collections.Counter(s)\n"
        "def color():\n    return Color.RED\n"
        "def liar():\n    return Liar(0)\n"
    )
    code = (
        "assert point() == (1, 2) and type(point()) is tuple\n"
        "assert count('aab') == {'a': 2, 'b': 1} and type(count('a')) is dict\n"
        "assert color() == 1 and type(color()) is int\n"
        "assert liar() == 0 and liar() != 5\n"
    )
    assert sandbox.run(prog, [FunctionalTest(code)]).verdicts == [Verdict.PASSED]
