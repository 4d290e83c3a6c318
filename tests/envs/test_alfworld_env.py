import inspect
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


def test_a_reused_engine_replays_the_game_exactly_like_a_freshly_loaded_one(tmp_path):
    from rlanything_core.envs.alfworld import engine_cache

    engine_cache.clear_idle_engines()
    g = game(CD).game_file
    rng = random.Random(1)

    def play(env: AlfworldEnv, actions: list[str] | None) -> tuple[list[str], list[str]]:
        obs = env.reset()
        texts, taken, admissible = [obs.observation], [], obs.admissible_actions
        for i in range(8):
            action = actions[i] if actions is not None else rng.choice(admissible)
            res = env.step(action)
            texts.append(res.observation)
            taken.append(action)
            admissible = res.admissible_actions
        return texts, taken

    fresh = AlfworldEnv(g)
    fresh_texts, actions = play(fresh, None)
    fresh.close()  # hands its engine to the cache, mid-game
    assert engine_cache.idle_engine_count() == 1
    reused = AlfworldEnv(g)
    assert play(reused, actions)[0] == fresh_texts  # same initial state, same transitions
    assert engine_cache.idle_engine_count() == 0  # it took the cached engine
    reused.close()

    copy = tmp_path / "game.tw-pddl"  # another file (even with the same content) never gets this game's engine
    copy.write_bytes(g.read_bytes())
    other = AlfworldEnv(copy)
    other.reset()
    assert engine_cache.idle_engine_count() == 1
    other.close()
    engine_cache.clear_idle_engines()
    assert engine_cache.idle_engine_count() == 0


def test_the_idle_engine_cache_is_bounded_and_closes_the_oldest(tmp_path, monkeypatch):
    from rlanything_core.envs.alfworld import engine_cache

    class Engine:
        closed = False

        def close(self) -> None:
            self.closed = True

    engine_cache.clear_idle_engines()
    monkeypatch.setattr(engine_cache, "MAX_IDLE_ENGINES", 2)
    files = [tmp_path / f"g{i}.tw-pddl" for i in range(3)]
    engines = [Engine() for _ in files]
    for f, e in zip(files, engines):
        f.write_text("{}")
        engine_cache.give_engine(f, e)
    assert engine_cache.idle_engine_count() == 2 and engines[0].closed and not engines[1].closed
    assert engine_cache.take_engine(files[0]) is None and engine_cache.take_engine(files[2]) is engines[2]
    files[1].write_text('{"changed": true}')  # rewritten in place: its cached engine is stale
    assert engine_cache.take_engine(files[1]) is None
    engine_cache.clear_idle_engines()
    assert engines[1].closed


def test_the_engine_speed_ups_give_what_the_unpatched_engine_gives(monkeypatch):
    import fast_downward
    from textworld.envs.pddl import textgen

    import rlanything_core.envs.alfworld.env as env_module
    from rlanything_core.envs.alfworld.env import start_engine

    def play() -> list[str]:
        engine = start_engine(game(CD).game_file)
        state, rng, texts = engine.reset(), random.Random(3), []
        for _ in range(12):
            texts += [str(state.feedback), "|".join(state["admissible_commands"])]
            state, _, _ = engine.step(rng.choice(state["admissible_commands"]))
        engine.close()
        return texts

    fast = play()
    # start_engine installed every speed-up
    assert getattr(textgen._parse_and_convert, "__wrapped__", None) is not None
    assert getattr(fast_downward.pddl2sas, "__wrapped__", None) is not None
    assert getattr(textgen.copy_context, "__wrapped__", None) is not None
    assert textgen.Rule is not textworld_rule()
    monkeypatch.setattr(textgen, "_parse_and_convert", textgen._parse_and_convert.__wrapped__)
    monkeypatch.setattr(fast_downward, "pddl2sas", inspect.unwrap(fast_downward.pddl2sas))  # under memo and disk cache
    monkeypatch.setattr(textgen, "copy_context", textgen.copy_context.__wrapped__)
    monkeypatch.setattr(textgen, "Rule", textworld_rule())
    monkeypatch.setattr(env_module, "speed_up_engine", lambda: None)
    assert play() == fast


def textworld_rule() -> type:
    from textworld.logic import Rule

    return Rule
