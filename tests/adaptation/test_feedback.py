from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.adaptation.feedback import (
    build_feedback,
    coding_feedback,
    high_risk_steps,
    last_boxed,
    per_test_pass_rates,
    render_feedback,
    success_rate,
    template_summary,
)
from rlanything_core.adaptation.llm import ScriptedChatModel
from rlanything_core.records import AgentStep, Episode, JudgeSample


def _step(action: str, votes: list[int]) -> AgentStep:
    return AgentStep(observation=f"obs {action}", admissible_actions=[action], prompt_token_ids=[], token_ids=[],
                     logprobs=[], response=action, action=action, judge=[JudgeSample(v, "") for v in votes])


def _episodes() -> list[Episode]:
    fail = Episode("t1", 0, "put a mug on desk", steps=[_step("go to desk 1", [1, -1, 1]),
                                                          _step("look", [-1, -1, -1]), _step("look", [-1, 0, -1]),
                                                          _step("look", [])])
    win = Episode("t1", 0, "put a mug on desk", steps=[_step("take mug 1", [1, 1, 1])], won=True)
    other = Episode("t2", 1, "heat an egg", steps=[_step("go to fridge 1", [-1])])
    return [fail, win, other]


def test_success_rate_and_high_risk() -> None:
    eps = _episodes()
    assert success_rate(eps[:2]) == 0.5 and success_rate([]) == 0.0
    assert high_risk_steps(eps[0]) == [1]  # a 0 (unparseable) vote or no vote is not "always -1"
    assert high_risk_steps(eps[2]) == [0]


def test_template_summary_is_deterministic_and_informative() -> None:
    text = template_summary(_episodes()[0])
    assert text == template_summary(_episodes()[0])
    assert "4 steps" in text and "'look'" in text and "1 ('look')" in text


def test_build_feedback_with_llm_and_template() -> None:
    chat = ScriptedChatModel([r"It looped. \boxed{The agent kept looking instead of searching.}", "no box here"])
    fb = build_feedback(_episodes(), chat_model=chat, seed=3)
    assert set(fb) == {"t1", "t2"}
    assert fb["t1"].success_rate == 0.5 and fb["t1"].num_rollouts == 2
    assert fb["t1"].failures[0].summary == "The agent kept looking instead of searching."
    assert fb["t1"].failures[0].high_risk_steps == [1]
    assert fb["t2"].failures[0].summary == "" and fb["t2"].failures[0].from_llm  # unparseable -> empty, counted
    prompt = chat.calls[0][-1]["content"]
    assert "High-risk steps (always -1): [1]" in prompt and "[1] observation: obs look | action: look" in prompt
    fb2 = build_feedback(_episodes(), tasks=["t2"])
    assert fb2["t1"].failures == [] and not fb2["t2"].failures[0].from_llm
    assert "Failure summaries" in render_feedback(fb2["t2"])


def test_coding_feedback_pass_rates() -> None:
    fb = coding_feedback("p", "q", [[True, True], [True, False], [False, False], [True, True]], [[True], [False],
                                                                                                 [True], [True]])
    assert fb.success_rate == 0.5
    assert fb.gt_test_pass_rates == [0.75, 0.5] and fb.gen_test_pass_rates == [0.75]
    assert "0.75, 0.50" in render_feedback(fb)
    assert per_test_pass_rates([]) == []


@given(st.text())
def test_last_boxed_never_crashes(text: str) -> None:
    out = last_boxed(text)
    assert out is None or ("\\boxed{" + out + "}") in text


def test_last_boxed_nested() -> None:
    assert last_boxed(r"\boxed{a} \boxed{b{c}}") == "b{c}"
    assert last_boxed(r"\boxed{a} \boxed{b{c}") == "a"
