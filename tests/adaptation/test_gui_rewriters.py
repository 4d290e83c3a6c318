"""GUI task rewriters: hints and page settings move, the verifier never does; bad rewrites are rejected with reasons."""

from __future__ import annotations

import json

import pytest

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.llm import ScriptedChatModel
from rlanything_core.adaptation.rewriters.gui_hints import (
    GuiHintRewriter,
    GuiLLMRewriter,
    check_gui_rewrite,
    parse_gui_rewrite,
)
from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskRewriter, TaskSpec
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, MiniwobTaskSpec


def task(name: str, **data: object) -> TaskSpec:
    spec = MiniwobTaskSpec(name, seed=3)
    return TaskSpec(task_id=f"{name}#s3", kind="miniwob", root_id=f"{name}#s3", data={**spec.to_data(), **data})


def test_rule_rewriter_adds_the_next_hint_then_removes_it() -> None:
    rw = GuiHintRewriter()
    assert isinstance(rw, TaskRewriter)
    easier = rw.rewrite(task("login-user"), Direction.EASIER, None)
    assert easier[0].valid and easier[0].task.data["hints"] == [CURATED_TASKS["login-user"].hints[0]]
    assert easier[0].task.data["task"] == "login-user" and easier[0].task.data["seed"] == 3
    assert easier[0].task.task_id == "login-user#s3@v1-hint+" and easier[0].task.version == 1
    harder = rw.rewrite(easier[0].task, Direction.HARDER, None)
    assert harder[0].valid and harder[0].task.data["hints"] == []
    MiniwobTaskSpec.from_data(harder[0].task.data)  # what the env plays


def test_rule_rewriter_moves_own_page_settings_within_range() -> None:
    rw = GuiHintRewriter(num_candidates=5)
    harder = rw.rewrite(task("rla-login-form"), Direction.HARDER, None)
    assert {c.detail for c in harder if c.valid} == {"distractors+", "shuffle+"}  # no hint to remove yet
    top = task("rla-login-form", settings={"distractors": 4, "shuffle": 1})
    out = rw.rewrite(top, Direction.HARDER, None)
    assert len(out) == 1 and not out[0].valid and out[0].reason is RejectReason.OUT_OF_RANGE
    easier = rw.rewrite(top, Direction.EASIER, None)
    assert {c.detail for c in easier if c.valid} == {"hint+", "distractors-", "shuffle-"}
    fully = task("click-test", hints=list(CURATED_TASKS["click-test"].hints))
    assert rw.rewrite(fully, Direction.EASIER, None)[0].reason is RejectReason.OUT_OF_RANGE


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"task": "click-button"}, RejectReason.VERIFIER_CHANGED),
        ({"seed": 4}, RejectReason.VERIFIER_CHANGED),
        ({"hints": ["  "]}, RejectReason.EMPTY_INSTRUCTION),
        ({"hints": "click it"}, RejectReason.WRONG_TYPES),
        ({"hints": ["x" * 301]}, RejectReason.TOO_LARGE),
        ({"settings": {"distractors": 9}}, RejectReason.OUT_OF_RANGE),
        ({"settings": {"speed": 1}}, RejectReason.OUT_OF_RANGE),
        ({}, RejectReason.NO_CHANGE),
    ],
)
def test_check_rejects_with_reason(change: dict, reason: RejectReason) -> None:
    parent = task("rla-login-form").data
    problem = check_gui_rewrite(parent, {**parent, **change})
    assert problem is not None and problem[0] is reason and problem[1]


def test_llm_rewriter_validates_every_proposal() -> None:
    replies = [
        'Sure. {"task": "login-user", "hints": ["The Login button is at the bottom."]}',
        '{"task": "click-button", "hints": ["Click Ok."]}',  # another page: another checker
        '{"task": "login-user", "hints": [""]}',
        '{"task": "login-user", "instruction": " ", "hints": ["x"]}',
        "I cannot help with that.",
    ]
    chat = ScriptedChatModel(replies)
    rw = GuiLLMRewriter(chat_model=chat, samples=len(replies))
    out = rw.rewrite(task("login-user"), Direction.EASIER, None)
    assert [c.valid for c in out] == [True, False, False, False, False]
    assert [c.reason for c in out[1:]] == [RejectReason.VERIFIER_CHANGED, RejectReason.EMPTY_INSTRUCTION,
                                           RejectReason.EMPTY_INSTRUCTION, RejectReason.UNPARSEABLE]  # fmt: skip
    assert out[0].task.data["hints"] == ["The Login button is at the bottom."] and out[0].raw_output == replies[0]
    prompt = chat.calls[0][-1]["content"]
    assert "login-user" in prompt and "EASIER" in prompt and "checker must stay the same" in prompt


def test_parse_gui_rewrite_takes_the_first_json_object_with_hints() -> None:
    text = 'plan: {"a": 1} then {"hints": ["h"], "settings": {}} trailing'
    assert parse_gui_rewrite(text) == {"hints": ["h"], "settings": {}}
    assert parse_gui_rewrite("{not json") is None
    assert json.dumps(parse_gui_rewrite('{"settings": {"shuffle": 1}}')) == '{"settings": {"shuffle": 1}}'
