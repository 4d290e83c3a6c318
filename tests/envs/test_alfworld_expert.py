import json

import pytest

from rlanything_core.envs.alfworld import AlfworldEnv, list_games
from rlanything_core.envs.alfworld.expert import (
    ExpertKind,
    expert_labels,
    expert_steps,
    handcoded_expert_steps,
    load_or_build_expert_steps,
)

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]

# valid_train games (training split) the hand-coded expert wins in a few steps, in small rooms
CANDLE = "pick_and_place_simple-Candle-None-Cabinet-428"  # 6 steps, searches the toilet first
ALARM = "pick_and_place_simple-AlarmClock-None-Dresser-319"  # 6 steps, searches three shelves


def train_game(task_folder: str) -> str:
    found = [g for g in list_games("valid_train") if g.game_file.parent.parent.name == task_folder]
    assert found, f"{task_folder} missing from valid_train"
    return str(found[0].game_file)


def replay(game_file: str, actions: list[str]) -> list:
    env = AlfworldEnv(game_file, max_episode_steps=None)
    first = env.reset()
    results = [env.step(a) for a in actions]
    env.close()
    return [first, *results]


def test_handcoded_expert_searches_and_its_records_replay_to_a_win():
    game = train_game(ALARM)
    steps = handcoded_expert_steps(game, seed=0)
    actions = [s.action for s in steps]
    walk = json.loads(open(game).read())["walkthrough"]
    assert len(actions) > len(walk)  # it searches: the stored walkthrough goes straight to the object
    assert actions[0].startswith("go to ") and actions[-1].startswith("move alarmclock")
    states = replay(game, actions)
    assert states[-1].won and not any(r.won for r in states[1:-1])
    assert states[0].goal == steps[0].goal == "put a alarmclock in dresser."
    for k, step in enumerate(steps):  # each record is exactly what the agent saw at that step
        assert step.game_file == game and step.action in step.admissible_actions
        assert step.history == tuple((s.observation, s.action) for s in steps[:k])
        assert step.observation == states[k].observation
        assert step.admissible_actions == tuple(states[k].admissible_actions)
    assert handcoded_expert_steps(game, seed=0) == steps  # deterministic given the seed


def test_perturbed_demonstrations_label_the_expert_command_and_keep_the_executed_one_in_history():
    game = train_game(ALARM)
    steps = handcoded_expert_steps(game, seed=3, perturb_prob=0.5, max_steps=40)
    executed = [a for _, a in steps[-1].history] + [steps[-1].action]
    labels = [s.action for s in steps]
    assert executed != labels  # some commands were random, the labels are the expert's recovery
    assert replay(game, executed)[-1].won


def test_dagger_labels_are_the_experts_commands_at_the_states_another_agent_reached():
    game = train_game(ALARM)
    own = handcoded_expert_steps(game, seed=0)
    # replaying the expert's own commands gives back its records exactly
    assert expert_labels([(game, [s.action for s in own])], seed=0) == own
    # an agent that wanders: "look" and "inventory" first, then the commands the expert took
    wander = ["look", "inventory"] + [s.action for s in own[:3]]
    labels = expert_labels([(game, wander), (game, [])], seed=0, num_workers=1)
    assert len(labels) == len(wander)  # not won: every state is labelled, and the empty episode adds nothing
    assert [a for _, a in labels[-1].history] == wander[:-1]  # the history holds what the agent executed
    assert labels[0].action == own[0].action  # the expert would have gone searching at once
    assert all(s.action in s.admissible_actions and not s.action.startswith(("look", "inventory")) for s in labels)
    states = replay(game, wander)
    assert [s.observation for s in labels] == [r.observation for r in states[:-1]]


def test_handcoded_expert_refuses_bad_arguments_and_unwon_games(tmp_path):
    game = train_game(CANDLE)
    with pytest.raises(ValueError, match="does not win|did not win"):
        handcoded_expert_steps(game, max_steps=2)
    with pytest.raises(ValueError, match="perturb_prob"):
        handcoded_expert_steps(game, perturb_prob=1.0)
    with pytest.raises(ValueError, match="max_steps"):
        handcoded_expert_steps(game, max_steps=0)
    with pytest.raises(ValueError, match="traj_data"):
        handcoded_expert_steps(tmp_path / "game.tw-pddl")


def test_cache_is_reused_for_the_same_settings_and_rebuilt_for_others(tmp_path, capsys):
    games = [train_game(CANDLE), train_game(ALARM)]
    cache = tmp_path / "demos.json"
    built = load_or_build_expert_steps(games, cache, expert="handcoded", max_steps=3)  # CANDLE needs 6: skipped
    data = json.loads(cache.read_text())
    assert data["skipped"] == [games[0], games[1]] and built == []
    assert capsys.readouterr().out == ""  # progress lines only when asked for
    built = load_or_build_expert_steps(games, cache, expert=ExpertKind.HANDCODED, max_steps=30, progress=True)
    assert {s.game_file for s in built} == set(games) and json.loads(cache.read_text())["skipped"] == []
    lines = capsys.readouterr().out.splitlines()
    assert "the handcoded expert's demonstrations: 0/2 games" in lines[0] and "2/2 games" in lines[-1], lines
    stamp = cache.stat().st_mtime_ns
    assert load_or_build_expert_steps(games, cache, expert="handcoded", max_steps=30, progress=True) == built
    assert cache.stat().st_mtime_ns == stamp  # read back, not rebuilt
    assert capsys.readouterr().out == ""  # nothing played, nothing to report
    walk = load_or_build_expert_steps(games[:1], tmp_path / "walk.json")
    assert [s.action for s in walk] == [s.action for s in expert_steps(games[0])]
    with pytest.raises(ValueError, match="expert"):
        load_or_build_expert_steps(games, cache, expert="planner")
    with pytest.raises(ValueError, match="num_workers"):
        load_or_build_expert_steps(games, cache, num_workers=0)
