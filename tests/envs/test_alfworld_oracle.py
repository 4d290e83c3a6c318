import json

import pytest
from _alfworld_fixtures import PENCIL, SOAP, game, walkthrough

from rlanything_core.envs.alfworld import (
    StepLabel,
    clear_plan_cache,
    command_cost,
    is_solvable,
    label_trajectory,
    optimal_plan,
)
from rlanything_core.envs.alfworld.oracle import _PLAN_CACHE

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


@pytest.mark.parametrize("use_shortcuts", [True, False])
def test_walkthrough_steps_are_all_progress_one_plan_step_each(use_shortcuts):
    g = game(PENCIL)
    wt = walkthrough(g)
    steps = label_trajectory(g.game_file, wt, use_shortcuts=use_shortcuts, use_cache=use_shortcuts)
    assert [s.label for s in steps] == [StepLabel.PROGRESS] * len(wt)
    assert [s.length_before for s in steps] == list(range(len(wt), 0, -1))
    assert [s.length_after for s in steps] == list(range(len(wt) - 1, -1, -1))
    assert steps[-1].won_after and steps[-1].plan_after == () and not any(s.won_after for s in steps[:-1])
    assert steps[0].plan_before == tuple(wt)  # the stored walkthrough is the planner's optimal plan here
    assert any(s.replanned for s in steps) is (not use_shortcuts)


def test_costly_clean_step_counts_its_domain_cost():
    g = game(SOAP)
    steps = label_trajectory(g.game_file, walkthrough(g))
    assert all(s.label is StepLabel.PROGRESS for s in steps)
    clean = [s for s in steps if s.action.startswith("clean ")]
    assert len(clean) == 1 and clean[0].cost_before - clean[0].cost_after == 5 == command_cost(clean[0].action)
    assert [s.length_before - s.length_after for s in steps] == [1] * len(steps)


def test_detours_are_neutral_or_regress_and_recovery_is_progress():
    g = game(PENCIL)
    wt = walkthrough(g)  # go to garbagecan 1, take pencil 2 from garbagecan 1, go to desk 1, move pencil 2 to desk 1
    actions = [wt[0], "go to desk 1", "look", "xyzzy", wt[0], wt[1], wt[1], wt[2], wt[3], "look"]
    clear_plan_cache()
    uncached = label_trajectory(g.game_file, actions, use_cache=False)
    assert not _PLAN_CACHE
    labelled = label_trajectory(g.game_file, actions)
    assert labelled == uncached and _PLAN_CACHE  # the cache holds exact per-state plans
    assert label_trajectory(g.game_file, actions) == labelled
    labels = [s.label for s in labelled]
    assert labels == [
        StepLabel.PROGRESS,  # toward the pencil
        StepLabel.REGRESS,  # walked away from it: one more step needed
        StepLabel.NEUTRAL,  # look changes nothing that matters
        StepLabel.NEUTRAL,  # inadmissible: nothing happens
        StepLabel.PROGRESS,
        StepLabel.PROGRESS,
        StepLabel.NEUTRAL,  # taking it again: nothing happens
        StepLabel.PROGRESS,
        StepLabel.PROGRESS,  # won
        StepLabel.NEUTRAL,  # after the win the cost stays 0
    ]


def test_solvability_of_real_and_rewritten_games(tmp_path):
    src = game(PENCIL).game_file
    assert is_solvable(src)
    assert optimal_plan(src) == tuple(walkthrough(game(PENCIL)))
    data = json.loads(src.read_text())
    # A goal naming an object type absent from the room: TextWorld cannot even build it.
    absent = dict(
        data, pddl_problem=data["pddl_problem"].replace("(objectType ?o PencilType)", "(objectType ?o WateringCanType)")
    )
    (tmp_path / "absent.tw-pddl").write_text(json.dumps(absent))
    assert not is_solvable(tmp_path / "absent.tw-pddl")
    assert not is_solvable(tmp_path / "missing.tw-pddl")
    with pytest.raises(ValueError, match="game_file"):
        label_trajectory(tmp_path / "missing.tw-pddl", ["look"])


def test_is_solvable_with_timeout_agrees_and_gives_up() -> None:
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.oracle import is_solvable

    game = list_games("valid_train")[0].game_file
    assert is_solvable(game, timeout_s=120.0) is True
    assert is_solvable(game, timeout_s=1e-4) is False  # no answer in time: not scheduled
