"""The encoder policy's state text and the encoder judge's step text, worked out from the agent's own history."""

from rlanything_core.collect.state_text import alfworld_state_text, judge_step_text

HISTORY = [
    ("You are in the middle of a room.", "go to countertop 1"),
    ("On the countertop 1, you see a apple 1.", "take apple 1 from countertop 1"),
    ("You pick up the apple 1 from the countertop 1.", "go to microwave 1"),
    ("You arrive at microwave 1.", "heat apple 1 with microwave 1"),
]


def test_holding_visited_and_recent_actions_come_from_the_history() -> None:
    text = alfworld_state_text("put a hot apple in fridge.", HISTORY, "You heat the apple 1.", recent_actions=2)
    lines = text.splitlines()
    assert lines[0] == "task: put a hot apple in fridge."
    assert lines[1] == "holding: apple 1 (heated)"
    assert lines[2] == "last actions: go to microwave 1; heat apple 1 with microwave 1"
    assert lines[3] == "observation: You heat the apple 1."
    assert lines[4] == "visited: countertop 1, microwave 1"
    assert lines[5].startswith("before: heat apple 1 with microwave 1 -> You arrive at microwave 1.")
    assert len(lines) == 7  # two earlier turns by default, the most recent first


def test_a_placed_object_is_no_longer_held_and_is_listed() -> None:
    history = [*HISTORY, ("You heat the apple 1.", "go to fridge 1"),
               ("You arrive at fridge 1.", "move apple 1 to fridge 1")]
    text = alfworld_state_text("put two apple in fridge.", history, "You move the apple 1 to the fridge 1.")
    assert "holding: nothing" in text and "placed: apple 1 in fridge 1" in text
    assert "visited: countertop 1, microwave 1, fridge 1" in text


def test_the_first_step_has_no_history_lines() -> None:
    text = alfworld_state_text("look at a mug under the desklamp.", [], "You are in the middle of a room.")
    assert text.splitlines() == ["task: look at a mug under the desklamp.", "holding: nothing", "last actions: none",
                                 "observation: You are in the middle of a room."]


def test_the_judge_text_holds_the_goal_action_result_and_previous_actions() -> None:
    text = judge_step_text("put a mug in sink.", "You see a mug 1.", "take mug 1 from desk 1", "You pick up the mug 1.",
                           ["go to desk 1"])
    assert text.splitlines()[:4] == ["task: put a mug in sink.", "action: take mug 1 from desk 1",
                                     "result: You pick up the mug 1.", "previous actions: go to desk 1"]
