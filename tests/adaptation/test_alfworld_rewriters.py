"""ALFWorld rewriters on real games with the real engine (TextWorld + fast-downward via envs.alfworld.oracle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.feedback import FailureNote, TaskFeedback
from rlanything_core.adaptation.llm import ScriptedChatModel
from rlanything_core.adaptation.rewriters.alfworld_goal import GoalSpec, parse_goal
from rlanything_core.adaptation.rewriters.alfworld_llm import AlfworldLLMRewriter
from rlanything_core.adaptation.rewriters.alfworld_rules import AlfworldRuleRewriter, EngineVerifier, materialize
from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskRewriter, TaskSpec

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()


def _task(name: str) -> TaskSpec:
    hits = sorted((SHARED / "alfworld" / "json_2.1.1" / "valid_train" / name).glob("*/game.tw-pddl"))
    if not hits:
        pytest.skip(f"{name} not found")
    return TaskSpec(task_id=name, kind="alfworld", root_id=name, data={"game_file": str(hits[0])})


def _assert_valid_in_engine(cands: list, out_dir: Path) -> None:  # type: ignore[type-arg]
    from rlanything_core.envs.alfworld import oracle

    for c in cands:
        if c.valid:
            path = Path(c.task.data["game_file"])
            assert out_dir in path.parents and SHARED not in path.parents
            assert oracle.compiles(str(path))[0] and oracle.is_solvable(str(path))
            assert parse_goal(json.loads(path.read_text())["pddl_problem"]) != parse_goal(
                json.loads(Path(_task(c.root_id).data["game_file"]).read_text())["pddl_problem"])


def test_rule_rewriter_both_directions(tmp_path: Path) -> None:
    rw = AlfworldRuleRewriter(out_dir=tmp_path, max_checks=3)
    assert isinstance(rw, TaskRewriter)
    task = _task("pick_two_obj_and_place-Book-None-Desk-302")
    for direction in (Direction.HARDER, Direction.EASIER):
        cands = rw.rewrite(task, direction, None)
        assert cands and cands[-1].valid, [(c.reason, c.detail) for c in cands]
        h = cands[-1].info
        assert (h["hardness"] > h["old_hardness"]) == (direction is Direction.HARDER)
        assert cands[-1].task.version == 1 and cands[-1].root_id == task.task_id
        _assert_valid_in_engine(cands, tmp_path)
    assert rw.rewrite(task, Direction.KEEP, None)[0].reason is RejectReason.NO_CHANGE


def test_unsatisfiable_goal_is_rejected_by_the_planner(tmp_path: Path) -> None:
    # passes every facts check, but the planner finds no plan (measured on this game)
    task = _task("pick_two_obj_and_place-Candle-None-CounterTop-406")
    goal = GoalSpec(parse_goal(json.loads(Path(task.data["game_file"]).read_text())["pddl_problem"]).task_type,
                    "SoapBarType", "GarbageCanType")
    cand = materialize(task, goal, direction="harder", rewriter="t", out_dir=tmp_path, verifier=EngineVerifier())
    assert not cand.valid and cand.reason is RejectReason.UNSOLVABLE


def test_llm_rewriter_validates_scripted_outputs(tmp_path: Path) -> None:
    replies = [
        r"Another object. \boxed{CellPhone,Desk}",  # valid: three cellphones, desks can hold them
        r"\boxed{DeskType, CellPhoneType}",  # same goal in the other order -> duplicate
        r"\boxed{Book,Desk}",  # the current goal
        r"\boxed{Apple,Fridge}",  # not in this room
        r"\boxed{Laptop,Desk}",  # one laptop only
        "I would pick the pillow",  # no box
    ]
    chat = ScriptedChatModel(replies)
    rw = AlfworldLLMRewriter(chat_model=chat, out_dir=tmp_path, attempts=len(replies))
    fb = TaskFeedback("t", "find two book and put them in desk.", 1.0, 8, [FailureNote([], "too easy")])
    cands = rw.rewrite(_task("pick_two_obj_and_place-Book-None-Desk-302"), Direction.HARDER, fb)
    got = [c.reason for c in cands]
    assert got == [None, RejectReason.DUPLICATE, RejectReason.NO_CHANGE, RejectReason.UNKNOWN_TYPE,
                   RejectReason.CONSTRAINT_VIOLATED, RejectReason.UNPARSEABLE]
    assert cands[0].raw_output == replies[0] and "HARDER" in cands[0].prompt and "too easy" in cands[0].prompt
    assert "(Attempt 1/6)" in chat.calls[0][-1]["content"]
    _assert_valid_in_engine(cands, tmp_path)


def test_broken_game_file_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "bad" / "game.tw-pddl"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"pddl_problem": "(define (problem x) (:init (foo)) )"}))
    task = TaskSpec("bad", "alfworld", "bad", data={"game_file": str(bad)})
    for rw in (AlfworldRuleRewriter(out_dir=tmp_path), AlfworldLLMRewriter(ScriptedChatModel(["x"]), tmp_path)):
        cands = rw.rewrite(task, Direction.HARDER, None)
        assert [c.reason for c in cands] == [RejectReason.UNSUPPORTED_TASK]
