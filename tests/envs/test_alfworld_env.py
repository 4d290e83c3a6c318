import json
import random

import pytest
from _alfworld_fixtures import CD, PENCIL, game, walkthrough

from rlanything_core.envs.alfworld import AlfworldEnv, AlfworldEnvFactory, compiles, parse_goal

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


def test_following_the_stored_walkthrough_wins():
    g = game(PENCIL)
    env = AlfworldEnv(g)
    obs = env.reset()
    assert obs.goal == "put some pencil on desk." == parse_goal(obs.observation)
    assert "Your task is to: put some pencil on desk." in obs.observation
    assert len(obs.admissible_actions) > 5 and "look" in obs.admissible_actions
    results = [env.step(a) for a in walkthrough(g)]
    assert [r.won for r in results] == [False, False, False, True]
    assert [r.done for r in results] == [False, False, False, True]
    assert results[-1].admissible_actions == () and not results[-1].truncated
    with pytest.raises(ValueError, match="reset"):
        env.step("look")
    assert env.reset().observation == obs.observation  # reset replays the same game from its start
    env.close()


def test_random_actions_and_garbage_do_not_crash_and_the_step_limit_truncates():
    rng = random.Random(0)
    env = AlfworldEnvFactory(max_episode_steps=12)(game(CD).game_file)
    obs = env.reset()
    bad = env.step("xyzzy plugh")
    assert bad.observation == "Nothing happens." and not bad.done
    admissible = bad.admissible_actions
    assert admissible == obs.admissible_actions
    results = []
    while True:
        res = env.step(rng.choice(admissible))
        results.append(res)
        if res.done:
            break
        admissible = res.admissible_actions
        assert admissible and all(isinstance(a, str) for a in admissible)
    assert env.steps == 12 and results[-1].truncated and not results[-1].won
    with pytest.raises(ValueError, match="str"):
        AlfworldEnv(game(CD)).step(3)  # type: ignore[arg-type]


def test_bad_construction_arguments(tmp_path):
    with pytest.raises(ValueError, match="game"):
        AlfworldEnv(tmp_path / "missing.tw-pddl")
    with pytest.raises(ValueError, match="max_episode_steps"):
        AlfworldEnv(game(CD), max_episode_steps=0)


def test_compiles_accepts_real_games_and_rejects_broken_ones(tmp_path):
    src = game(PENCIL).game_file
    assert compiles(src) == (True, "")
    data = json.loads(src.read_text())
    broken = dict(data, pddl_problem=data["pddl_problem"][:-200])  # truncated PDDL
    (tmp_path / "broken.tw-pddl").write_text(json.dumps(broken))
    ok, reason = compiles(tmp_path / "broken.tw-pddl")
    assert not ok and reason
    (tmp_path / "junk.tw-pddl").write_text("{not json")
    assert compiles(tmp_path / "junk.tw-pddl")[0] is False
    assert compiles(tmp_path / "absent.tw-pddl") == (False, f"no such file: {tmp_path / 'absent.tw-pddl'}")
