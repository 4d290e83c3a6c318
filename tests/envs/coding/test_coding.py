"""Coding loaders on the real files, code extraction, unit-test parsing and end-to-end tasks."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from rlanything_core.envs.coding import (
    CodingProblem,
    CodingTask,
    TestType,
    default_shared_dir,
    extract_code,
    load_codecontests,
    load_humaneval,
    load_kickstart,
    load_leetcode,
    load_livebench,
    load_livecodebench,
    parse_unit_test,
)
from rlanything_core.sandbox import Sandbox, SandboxConfig, Verdict

SHARED = default_shared_dir()
needs_data = pytest.mark.skipif(not (SHARED / "coding").is_dir(), reason="../shared/coding not present")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(time_limit_s=10.0))


@pytest.fixture(scope="module")
def humaneval() -> list[CodingProblem]:
    return load_humaneval()


@needs_data
def test_real_counts() -> None:
    lc = load_leetcode()
    assert len(lc) == 228 and sum(p.also_in_lcb_v5_window for p in lc) == 97
    assert all(p.test_type is TestType.FUNCTIONAL and "check(Solution()." in p.check_code for p in lc)
    ks = load_kickstart()
    assert len(ks) == 134 and sum(len(p.tests) for p in ks) == 269
    assert all(p.float_tolerance is not None and not p.case_sensitive for p in ks)
    cc = load_codecontests()
    assert len(cc) == 165 and sum(len(p.tests) for p in cc) == 1837


def test_humaneval_count_and_canonical_passes(humaneval: list[CodingProblem], sandbox: Sandbox) -> None:
    assert len(humaneval) == 164
    for p in humaneval[:3]:
        task = CodingTask(p, sandbox)
        good = p.prompt + p.metadata["canonical_solution"]
        assert task.evaluate(good).verdicts == [Verdict.PASSED]
        bad = p.prompt + "    return None\n"
        assert task.evaluate(bad).verdicts == [Verdict.WRONG_ANSWER]


@needs_data
def test_leetcode_end_to_end(sandbox: Sandbox) -> None:
    prob = next(p for p in load_leetcode() if p.id == "leetcode/shortest-distance-after-road-addition-queries-i")
    good = (
        "class Solution:\n"
        "    def shortestDistanceAfterQueries(self, n: int, queries: List[List[int]]) -> List[int]:\n"
        "        g = [[i + 1] for i in range(n - 1)] + [[]]\n"
        "        out = []\n"
        "        for u, v in queries:\n"
        "            g[u].append(v)\n"
        "            dist = [0] + [-1] * (n - 1)\n"
        "            q = deque([0])\n"
        "            while q:\n"
        "                x = q.popleft()\n"
        "                for y in g[x]:\n"
        "                    if dist[y] < 0:\n"
        "                        dist[y] = dist[x] + 1\n"
        "                        q.append(y)\n"
        "            out.append(dist[n - 1])\n"
        "        return out\n"
    )
    task = CodingTask(prob, sandbox)
    assert task.evaluate(good).verdicts == [Verdict.PASSED]
    assert task.evaluate(good.replace("dist[n - 1]", "dist[n - 1] + 1")).verdicts == [Verdict.WRONG_ANSWER]
    response = f"Here is my BFS.\n```python\n{good}```\n"
    assert task.evaluate_response(response).result.all_passed


@needs_data
def test_kickstart_end_to_end(sandbox: Sandbox) -> None:
    prob = next(p for p in load_kickstart() if p.id == "kickstart/2013/practice_round/bad_horse")
    good = (
        "import sys\n"
        "def main():\n"
        "    data = sys.stdin.read().split()\n"
        "    t = int(data[0]); k = 1\n"
        "    for case in range(1, t + 1):\n"
        "        m = int(data[k]); k += 1\n"
        "        adj = {}\n"
        "        for _ in range(m):\n"
        "            a, b = data[k], data[k + 1]; k += 2\n"
        "            adj.setdefault(a, []).append(b); adj.setdefault(b, []).append(a)\n"
        "        color = {}; ok = True\n"
        "        for s in adj:\n"
        "            if s in color: continue\n"
        "            color[s] = 0; stack = [s]\n"
        "            while stack and ok:\n"
        "                x = stack.pop()\n"
        "                for y in adj[x]:\n"
        "                    if y not in color:\n"
        "                        color[y] = 1 - color[x]; stack.append(y)\n"
        "                    elif color[y] == color[x]:\n"
        "                        ok = False\n"
        '        print(f\'Case #{case}: {"Yes" if ok else "No"}\')\n'
        "main()\n"
    )
    task = CodingTask(prob, sandbox)
    result = task.evaluate(good)
    assert result.all_passed and len(result.tests) == len(prob.tests) == 2
    wrong = task.evaluate(good.replace('"Yes" if ok else "No"', '"Yes"'))
    assert wrong.verdicts == [Verdict.WRONG_ANSWER, Verdict.WRONG_ANSWER]
    assert task.evaluate(good.replace("'Case #", "'case #")).all_passed  # Kattis default: case-insensitive


@needs_data
def test_codecontests_end_to_end(sandbox: Sandbox) -> None:
    prob = load_codecontests()[0]  # 1575A Another Sorting Problem
    good = (
        "import sys\n"
        "def main():\n"
        "    data = sys.stdin.read().split()\n"
        "    n, m = int(data[0]), int(data[1]); s = data[2:2 + n]\n"
        "    def key(i):\n"
        "        return tuple(ord(c) if j % 2 == 0 else -ord(c) for j, c in enumerate(s[i]))\n"
        "    print(' '.join(str(i + 1) for i in sorted(range(n), key=key)))\n"
        "main()\n"
    )
    task = CodingTask(prob, sandbox)
    assert task.evaluate(good).all_passed
    assert not task.evaluate(good.replace("-ord(c)", "ord(c)")).all_passed


def test_missing_data_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_leetcode(tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_codecontests(bad)


def _lcb_compress(cases: list[dict]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def test_livecodebench_and_livebench_formats(tmp_path: Path, sandbox: Sandbox) -> None:
    stdin_row = {
        "question_id": "abc001_a",
        "question_title": "Add",
        "question_content": "Read a b, print a+b.",
        "platform": "atcoder",
        "contest_date": "2024-09-01T00:00:00",
        "difficulty": "easy",
        "starter_code": "",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
        "private_test_cases": _lcb_compress([{"input": "5 7\n", "output": "12\n", "testtype": "stdin"}]),
        "metadata": "{}",
    }
    func_row = {
        "question_id": "3000",
        "question_title": "Twice",
        "question_content": "Return 2*x.",
        "platform": "leetcode",
        "contest_date": "2024-09-01T00:00:00",
        "difficulty": "easy",
        "starter_code": "class Solution:\n    def twice(self, x: int) -> int:\n        ",
        "public_test_cases": [{"input": "3", "output": "6", "testtype": "functional"}],
        "private_test_cases": json.dumps([{"input": "[1, 2]\n", "output": "[1, 2, 1, 2]", "testtype": "functional"}]),
        "metadata": json.dumps({"func_name": "twice"}),
    }
    lcb = tmp_path / "lcb.jsonl"
    lcb.write_text("\n".join(json.dumps(r) for r in (stdin_row, func_row)) + "\n")
    p_stdin, p_func = load_livecodebench(lcb)
    assert p_stdin.test_type is TestType.STDIN and len(p_stdin.tests) == 2 and len(p_stdin.sample_tests) == 1
    assert CodingTask(p_stdin, sandbox).evaluate("a, b = map(int, input().split())\nprint(a + b)\n").all_passed
    assert p_func.test_type is TestType.FUNCTIONAL and p_func.entry_point == "Solution().twice"
    good = "class Solution:\n    def twice(self, x):\n        return x * 2\n"
    assert CodingTask(p_func, sandbox).evaluate(good).all_passed
    assert not CodingTask(p_func, sandbox).evaluate(good.replace("x * 2", "x + x + 1")).all_passed

    lb = tmp_path / "question.jsonl"
    lb.write_text(
        json.dumps(
            {
                "question_id": "q1",
                "category": "coding",
                "task": "LCB_generation",
                "turns": ["Solve: print a+b"],
                "public_test_cases": stdin_row["public_test_cases"],
                "private_test_cases": stdin_row["private_test_cases"],
                "original_json": {k: v for k, v in stdin_row.items() if "test_cases" not in k},
                "release_date": "2024-10-01",
            }
        )
        + "\n"
    )
    (p_lb,) = load_livebench(lb)
    assert p_lb.source == "livebench" and p_lb.prompt == "Solve: print a+b" and len(p_lb.tests) == 2
    evil = dict(stdin_row, private_test_cases=base64.b64encode(zlib.compress(pickle.dumps(Path("/")))).decode())
    lcb.write_text(json.dumps(evil) + "\n")
    with pytest.raises(ValueError, match="cannot decode"):
        load_livecodebench(lcb)


def test_extract_code_rules() -> None:
    assert extract_code("```python\na = 1\n```\ntext\n```py\nb = 2\n```") == "b = 2\n"
    assert extract_code("```python\na = 1\n```\n```\nplain = 1\n```") == "a = 1\n"
    assert extract_code("```\nplain = 1\n```") == "plain = 1\n"
    assert extract_code("```python\ndef f():\n    return 1\n") == "def f():\n    return 1\n"
    assert extract_code("print('whole')") == "print('whole')"
    assert extract_code("Sorry, I can't.") is None
    assert extract_code("") is None


def test_parse_unit_test() -> None:
    text = (
        "Format: **Test Input:** ```<stdin>``` **Test Output:** ```<stdout>```\n"
        "Reasoning...\n**Test Input:**\n```\n3\n1 2 3\n```\n**Test Output:**\n```text\n6\n```\n"
        "**Explanation:** the sum."
    )
    assert parse_unit_test(text) == ("3\n1 2 3\n", "6")
    assert parse_unit_test("**Test Input:**\n5\n\n**Test Output:**\n25\n") == ("5\n", "25")
    assert parse_unit_test("test input: ```1``` TEST OUTPUT: ```2```") == ("1\n", "2")
    assert parse_unit_test("**Test Input:**\n```\n1\n```\n") is None
    assert parse_unit_test("**Test Input:**\n```\n1\n```\n**Test Output:**\n```\n```\n") is None
    assert parse_unit_test("no test here") is None


def test_response_without_code_is_counted(humaneval: list[CodingProblem], sandbox: Sandbox) -> None:
    out = CodingTask(humaneval[0], sandbox).evaluate_response("I refuse.")
    assert out.program is None and out.pass_fraction == 0.0 and out.result.verdicts == [Verdict.WRONG_ANSWER]


def test_problem_validation() -> None:
    with pytest.raises(ValueError, match="check_code"):
        CodingProblem(id="x", source="s", prompt="p", test_type=TestType.FUNCTIONAL)
    with pytest.raises(ValueError, match="at least one test"):
        CodingProblem(id="x", source="s", prompt="p", test_type=TestType.STDIN)


@needs_data
def test_leetcode_tree_inputs_cross_to_the_program(sandbox: Sandbox) -> None:
    """``tree_node`` builds the input in the harness (the dataset's prompt is its setup); the program gets a copy."""
    prob = next(p for p in load_leetcode() if p.id == "leetcode/k-th-largest-perfect-subtree-size-in-binary-tree")
    good = (
        "class Solution:\n"
        "    def kthLargestPerfectSubtree(self, root: Optional[TreeNode], k: int) -> int:\n"
        "        sizes = []\n"
        "        def height(node):\n"
        "            if node is None:\n"
        "                return 0\n"
        "            left, right = height(node.left), height(node.right)\n"
        "            if left >= 0 and left == right:\n"
        "                sizes.append(2 ** (left + 1) - 1)\n"
        "                return left + 1\n"
        "            return -1\n"
        "        height(root)\n"
        "        sizes.sort(reverse=True)\n"
        "        return sizes[k - 1] if k <= len(sizes) else -1\n"
    )
    task = CodingTask(prob, sandbox)
    assert task.evaluate(good).verdicts == [Verdict.PASSED]
    assert task.evaluate(good.replace("sizes.sort(reverse=True)", "sizes.sort()")).verdicts == [Verdict.WRONG_ANSWER]
    # the prompt's helpers stay the harness's own: redefining them in the program changes nothing
    cheat = (
        "def tree_node(values):\n    return None\n"
        "class Solution:\n    def kthLargestPerfectSubtree(self, root, k):\n        return -1\n"
    )
    assert task.evaluate(cheat).verdicts == [Verdict.WRONG_ANSWER]


def test_humaneval_helpers_come_from_the_prompt(humaneval: list[CodingProblem], sandbox: Sandbox) -> None:
    """HumanEval/32 checks ``poly(xs, candidate(xs))`` with the prompt's ``poly``; the program's own is ignored."""
    prob = next(p for p in humaneval if p.id == "HumanEval/32")
    assert prob.check_program_names == ("find_zero",)
    cheat = prob.prompt + "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n"
    assert CodingTask(prob, sandbox).evaluate(cheat).verdicts == [Verdict.WRONG_ANSWER]
    good = prob.prompt + prob.metadata["canonical_solution"]
    assert CodingTask(prob, sandbox).evaluate(good).verdicts == [Verdict.PASSED]
