from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlanything_core.adaptation.rewriters.alfworld_goal import (
    AlfTaskType,
    GoalSpec,
    check_goal,
    parse_facts,
    parse_goal,
    rewrite_problem,
    write_game,
)
from rlanything_core.adaptation.rewriters.alfworld_llm import parse_two_tokens, resolve_goal
from rlanything_core.adaptation.rewriters.alfworld_rules import admissible_goals
from rlanything_core.adaptation.rewriters.protocol import RejectReason

pytestmark = pytest.mark.alfworld

TWO = "pick_two_obj_and_place-Book-None-Desk-302"
CLEAN = "pick_clean_then_place_in_recep-Bowl-None-Shelf-7"
LOOK = "look_at_obj_in_light-Book-None-DeskLamp-302"


SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "alfworld" / "json_2.1.1" / "valid_train"


def game(name: str) -> str:
    hits = sorted((SHARED / name).glob("*/game.tw-pddl"))
    if not hits:
        pytest.skip(f"ALFWorld game {name} not found")
    return str(hits[0])


def _problem(name: str) -> str:
    return json.loads(Path(game(name)).read_text())["pddl_problem"]


def test_every_valid_game_parses_and_its_own_goal_is_admissible(alf_root: Path) -> None:
    files = sorted(alf_root.glob("valid_*/*/*/game.tw-pddl"))
    assert len(files) > 400
    for f in files:
        problem = json.loads(f.read_text())["pddl_problem"]
        task_type = json.loads((f.parent / "traj_data.json").read_text())["task_type"]
        goal, facts = parse_goal(problem), parse_facts(problem)
        assert goal.task_type.value == task_type, f
        dummy = GoalSpec(goal.task_type, "NoSuchType", goal.target)
        assert check_goal(facts, dummy, goal) == (None, ""), f  # the dataset's goals satisfy our constraints
        assert rewrite_problem(problem, goal) == problem


def test_rewrite_changes_only_the_goal_tokens() -> None:
    problem = _problem(TWO)
    new = GoalSpec(AlfTaskType.PICK_TWO_OBJ_AND_PLACE, "CDType", "SafeType")
    out = rewrite_problem(problem, new)
    head = problem.index("(:goal")
    assert out[:head] == problem[:head]
    assert parse_goal(out) == new
    assert out.count("CDType") == problem.count("CDType") + 2 and "(receptacleType ?r DeskType)" not in out[head:]


def test_check_goal_rejections() -> None:
    facts, cur = parse_facts(_problem(TWO)), parse_goal(_problem(TWO))
    two = AlfTaskType.PICK_TWO_OBJ_AND_PLACE
    assert check_goal(facts, cur, cur)[0] is RejectReason.NO_CHANGE
    assert check_goal(facts, cur, GoalSpec(two, "AppleType", "DeskType"))[0] is RejectReason.UNKNOWN_TYPE
    assert check_goal(facts, cur, GoalSpec(two, "BookType", "FridgeType"))[0] is RejectReason.UNKNOWN_TYPE
    assert check_goal(facts, cur, GoalSpec(two, "PillowType", "DrawerType"))[0] is RejectReason.CONSTRAINT_VIOLATED
    # one laptop only: a two-object goal needs two instances
    assert check_goal(facts, cur, GoalSpec(two, "LaptopType", "DeskType"))[0] is RejectReason.CONSTRAINT_VIOLATED
    assert check_goal(facts, cur, GoalSpec(AlfTaskType.PICK_AND_PLACE_SIMPLE, "CDType", "DeskType"))[0] is (
        RejectReason.UNSUPPORTED_TASK)
    clean_facts, clean = parse_facts(_problem(CLEAN)), parse_goal(_problem(CLEAN))
    nonclean = [t for t in clean_facts.obj_instances if clean_facts.has("pickupable", t)
                and not clean_facts.has("cleanable", t)]
    reason, detail = check_goal(clean_facts, clean, GoalSpec(clean.task_type, nonclean[0], clean.target))
    assert reason is RejectReason.CONSTRAINT_VIOLATED and ("cleanable" in detail or "canContain" in detail)
    look_facts, look = parse_facts(_problem(LOOK)), parse_goal(_problem(LOOK))
    assert check_goal(look_facts, look, GoalSpec(look.task_type, look.obj, "BookType"))[0] is (
        RejectReason.CONSTRAINT_VIOLATED)


def test_admissible_goals_all_pass_and_exclude_current() -> None:
    for name in (TWO, CLEAN, LOOK):
        facts, cur = parse_facts(_problem(name)), parse_goal(_problem(name))
        goals = admissible_goals(facts, cur)
        assert goals and cur not in goals
        assert all(check_goal(facts, cur, g)[0] is None for g in goals)


def test_write_game_updates_grammar_and_traj(tmp_path: Path) -> None:
    new = GoalSpec(AlfTaskType.PICK_TWO_OBJ_AND_PLACE, "CDType", "SafeType")
    out = write_game(Path(game(TWO)), new, tmp_path, stem="v1")
    data = json.loads(out.read_text())
    assert "Your task is to: find two cd and put them in safe." in data["grammar"]
    assert data["walkthrough"] == [] and parse_goal(data["pddl_problem"]) == new
    traj = json.loads((out.parent / "traj_data.json").read_text())
    assert traj["pddl_params"]["object_target"] == "CD" and traj["pddl_params"]["parent_target"] == "Safe"
    assert write_game(Path(game(TWO)), new, tmp_path, stem="v1") == out  # same rewrite, same path
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]


TOKENS = st.sampled_from(["BookType", "book", "Desk", "DeskType", "CD", "Safe", "Laptop", "Pillow", "Apple",
                          "FridgeType", "", "💥", "Type", "desk lamp", "{", "}", ","])
OUTPUTS = st.one_of(
    st.text(max_size=80),
    st.builds(lambda a, b, sep, wrap: "think... \\boxed{" + wrap.format(a + sep + b) + "}", TOKENS, TOKENS,
              st.sampled_from([",", "，", ";", " ", ", "]), st.sampled_from(["{}", "[{}]", "({})", "'{}'"])),
    st.builds(lambda a: "\\boxed{" + a, st.text(max_size=20)),  # truncated
    st.builds(lambda xs: "\\boxed{" + repr(xs) + "}", st.lists(st.one_of(st.integers(), TOKENS), max_size=3)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OUTPUTS)
def test_fuzzed_llm_output_is_rejected_with_a_reason_or_admissible(raw: str) -> None:
    facts, cur = parse_facts(_problem(TWO)), parse_goal(_problem(TWO))
    tokens = parse_two_tokens(raw)
    if tokens is None:
        return
    assert len(tokens) == 2
    goal, reason, _ = resolve_goal(tokens, facts, cur)
    if goal is None:
        assert reason is RejectReason.UNKNOWN_TYPE
        return
    reason, detail = check_goal(facts, cur, goal)
    assert reason is None or isinstance(reason, RejectReason) and detail


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_malformed_pddl_raises_value_error_only(text: str) -> None:
    for fn in (parse_goal, parse_facts):
        try:
            fn(text)
        except ValueError:
            pass


def test_parse_two_tokens_variants() -> None:
    assert parse_two_tokens(r"\boxed{CD,Safe}") == ["CD", "Safe"]
    assert parse_two_tokens("\\boxed{'CDType'，\"SafeType\"}") == ["CDType", "SafeType"]
    assert parse_two_tokens(r"\boxed{[1, 2]}") is None or parse_two_tokens(r"\boxed{[1, 2]}") == ["1", "2"]
    assert parse_two_tokens(r"\boxed{a,b,c}") is None
