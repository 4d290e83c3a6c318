"""The hand-coded expert wins two-object tasks (ALFWorld's own agent names the first object in its second put)."""

from __future__ import annotations

import pytest

from rlanything_core.envs.alfworld.expert import _held_object_move, handcoded_expert_steps


def test_the_put_command_is_repaired_to_the_held_object() -> None:
    admissible = ["go to shelf 1", "move alarmclock 2 to desk 1", "look"]
    assert _held_object_move("move alarmclock 1 to desk 1", admissible) == "move alarmclock 2 to desk 1"
    assert _held_object_move("move alarmclock 1 to shelf 1", admissible) == "move alarmclock 1 to shelf 1"
    assert _held_object_move("go to desk 1", admissible) == "go to desk 1"


@pytest.mark.alfworld
@pytest.mark.slow
def test_the_expert_wins_a_pick_two_game() -> None:
    from rlanything_core.envs.alfworld.data import list_games

    game = next(g for g in list_games("valid_train") if g.task_type == "pick_two_obj_and_place")
    steps = handcoded_expert_steps(game.game_file, max_steps=30)
    moves = [s.action for s in steps if s.action.startswith("move ")]
    assert len(moves) == 2 and moves[0] != moves[1]
