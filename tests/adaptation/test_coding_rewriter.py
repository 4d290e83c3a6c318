from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.feedback import coding_feedback
from rlanything_core.adaptation.llm import ScriptedChatModel
from rlanything_core.adaptation.rewriters.coding import (
    CodingLimits,
    CodingRewriter,
    last_json_object,
    task_from_problem,
    validate_payload,
)
from rlanything_core.adaptation.rewriters.protocol import RejectReason

SOLUTION = "a, b = map(int, input().split())\nprint(a * b + 1)\n"


def _payload(**over: object) -> str:
    data: dict[str, object] = {
        "question": "Read a and b; print a*b+1.", "test_method": "stdio", "test_time_limit": 4,
        "test_input": ["1 2", "3 4", "0 0", "10 10"], "test_output": ["3", "13", "1", "101"], "solution": SOLUTION}
    data.update(over)
    return "Here you go:\n```json\n" + json.dumps(data) + "\n```"


@pytest.fixture(scope="module")
def root_task():  # type: ignore[no-untyped-def]
    from rlanything_core.envs.coding.loaders import load_codecontests

    try:
        problems = load_codecontests()
    except FileNotFoundError:
        pytest.skip("no coding data")
    return task_from_problem(next(p for p in problems if p.tests))


def test_scripted_rewrites_on_a_real_problem_run_in_the_sandbox(root_task) -> None:  # type: ignore[no-untyped-def]
    replies = [
        _payload(),  # valid: its solution passes its tests
        _payload(test_output=["3", "13", "1", "100"]),  # one wrong expected output
        _payload(solution=None, question="Other."),  # nothing to check the tests against
        _payload(test_input=["1 2"], test_output=["3"]),  # too few tests
        '{"question": "x", "test_input": [1, 2, 3, 4], "test_output": ["1", "2", "3", "4"]}',
        '{"question": "truncated", "test_input": ["1", "2"',
        _payload(),  # repeated sample
    ]
    chat = ScriptedChatModel(replies)
    rw = CodingRewriter(chat_model=chat, samples=len(replies))
    fb = coding_feedback(root_task.task_id, "q", [[True] * 8] * 4)
    cands = rw.rewrite(root_task, Direction.HARDER, fb)
    assert [c.reason for c in cands] == [None, RejectReason.TESTS_INCONSISTENT, RejectReason.NO_SOLUTION,
                                         RejectReason.TOO_FEW_TESTS, RejectReason.WRONG_TYPES,
                                         RejectReason.UNPARSEABLE, RejectReason.DUPLICATE]
    good = cands[0]
    assert good.task is not None and good.task.version == 1 and good.task.root_id == root_task.task_id
    assert good.info["tests_verified"] and cands[1].info["solution_passes"] == [True, True, True, False]
    prompt = chat.calls[0][-1]["content"]
    assert "CRITICAL ANCHOR" in prompt and "HARDER" in prompt and "Pass rate per ground-truth test" in prompt


def test_unverified_mode_accepts_without_solution(root_task) -> None:  # type: ignore[no-untyped-def]
    rw = CodingRewriter(chat_model=ScriptedChatModel([_payload(solution=None)]), samples=1, require_solution=False)
    (cand,) = rw.rewrite(root_task, Direction.EASIER, None)
    assert cand.valid and cand.info["tests_verified"] is False


def test_limits() -> None:
    limits = CodingLimits(max_tests=5, max_question_chars=50)
    assert validate_payload({"question": "q" * 60, "test_input": ["1"] * 4, "test_output": ["1"] * 4},
                            limits)[1] is RejectReason.TOO_LARGE
    assert validate_payload({"question": "q", "test_input": ["1"] * 6, "test_output": ["1"] * 6},
                            limits)[1] is RejectReason.TOO_LARGE
    assert validate_payload({"question": "q", "test_input": ["1"] * 4, "test_output": ["1"] * 3},
                            limits)[1] is RejectReason.TOO_FEW_TESTS
    assert validate_payload([1, 2], limits)[1] is RejectReason.WRONG_TYPES
    assert last_json_object('a {"x": "}{"} b {"y": [1, {"z": 2}]}') == {"y": [1, {"z": 2}]}


JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
                       lambda kids: st.one_of(st.lists(kids, max_size=6),
                                              st.dictionaries(st.sampled_from(["question", "test_input",
                                                                               "test_output", "solution", "k"]),
                                                              kids, max_size=5)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSONISH, st.integers(min_value=0, max_value=200), st.text(max_size=30))
def test_fuzzed_json_is_rejected_with_a_reason_never_a_crash(value: object, cut: int, noise: str) -> None:
    text = noise + json.dumps(value)
    for raw in (text, text[:cut]):
        data, reason, detail = validate_payload(last_json_object(raw), CodingLimits())
        assert (data is None) == (reason is not None)
        if data is not None:
            assert len(data["test_input"]) == len(data["test_output"]) >= 4
