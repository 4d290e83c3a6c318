"""Kept and reset engines (``envs/alfworld/engine_cache.py``) play exactly like freshly loaded, unpatched ones.

Over real games of every task type: the same observations, admissible commands, wins and step counts for the same
game and action seed, whether the engine is loaded by the unpatched TextWorld, loaded with every speed-up (the logic
parse and the PDDL translations read back from the disk cache by a new process's memory, the planner library's copy
handed on from another game's engine), or taken from the idle cache after an earlier episode left it mid-game.
"""

from __future__ import annotations

import inspect
import random

import pytest

from rlanything_core.envs.alfworld import AlfworldEnv, AlfworldGame, engine_cache, list_games
from rlanything_core.envs.alfworld.downward_libraries import reuse_downward_libraries
from rlanything_core.envs.alfworld.sampling import stratified_sample

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]

Trace = list[tuple[str, tuple[str, ...], bool, bool]]


def _games() -> list[AlfworldGame]:
    """One valid_seen game of each of the six task types (drawn once, seed 0)."""
    return stratified_sample(list_games("valid_seen"), 6, stratum=lambda g: g.task_type, seed=0)


def _play(env: AlfworldEnv, seed: int, steps: int = 10) -> Trace:
    """Reset, then ``steps`` random admissible commands (seeded): what the agent sees at every step."""
    rng = random.Random(seed)
    obs = env.reset()
    trace: Trace = [(obs.observation, obs.admissible_actions, False, False)]
    admissible = obs.admissible_actions
    for _ in range(steps):
        res = env.step(rng.choice(admissible))
        trace.append((res.observation, res.admissible_actions, res.won, res.done))
        if res.done:
            break
        admissible = res.admissible_actions
    return trace


def _unpatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """TextWorld as installed: no memoized parse, translation or derivation (what a fresh load computed before)."""
    import fast_downward
    from textworld.envs.pddl import logic, textgen
    from textworld.envs.pddl.pddl import PddlEnv

    import rlanything_core.envs.alfworld.env as env_module

    engine_cache.memoize_logic_parsing()
    engine_cache.memoize_pddl_translation()
    engine_cache.memoize_grammar_parsing()
    engine_cache.lighten_grammar_derivation()
    from textworld.logic import Rule

    monkeypatch.setattr(logic, "_parse_and_convert", logic._parse_and_convert.__wrapped__)
    monkeypatch.setattr(fast_downward, "pddl2sas", inspect.unwrap(fast_downward.pddl2sas))
    reuse_downward_libraries()  # and a library copy of its own for every engine
    monkeypatch.setattr(fast_downward, "load_lib", inspect.unwrap(fast_downward.load_lib))
    for method in ("reset", "load", "step", "close"):
        monkeypatch.setattr(PddlEnv, method, inspect.unwrap(getattr(PddlEnv, method)))
    monkeypatch.setattr(textgen, "_parse_and_convert", textgen._parse_and_convert.__wrapped__)
    monkeypatch.setattr(textgen, "copy_context", textgen.copy_context.__wrapped__)
    monkeypatch.setattr(textgen, "Rule", Rule)
    monkeypatch.setattr(env_module, "speed_up_engine", lambda: None)


def test_kept_and_reset_engines_play_every_task_type_like_fresh_unpatched_loads(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path / "cache"))
    games = _games()
    assert len({g.task_type for g in games}) == 6
    engine_cache.clear_idle_engines()
    with monkeypatch.context() as plain:
        _unpatched(plain)
        fresh = {}
        for i, g in enumerate(games):
            env = AlfworldEnv(g, max_idle_engines=0)  # closed on close(): nothing of it is reused
            fresh[i] = _play(env, seed=i)
            env.close()
    assert engine_cache.idle_engine_count() == 0

    from textworld.envs.pddl import logic

    for i, g in enumerate(games):  # loaded with every speed-up: the parse and translations are stored on disk now
        env = AlfworldEnv(g)
        assert _play(env, seed=i) == fresh[i], g.game_file
        _play(env, seed=100 + i, steps=3)  # the engine goes back to the idle cache mid-game, as after a truncation
        env.close()
    assert engine_cache.idle_engine_count() == len(games)
    assert getattr(logic._parse_and_convert, "__wrapped__", None) is not None
    assert list((tmp_path / "cache" / "tw_logic").rglob("*.pickle.z"))  # the parse reached the disk

    engine_cache._IDLE.clear()  # forget the engines without closing them: the next loads read the disk cache
    for i, g in enumerate(games):
        env = AlfworldEnv(g)
        assert _play(env, seed=i) == fresh[i]
        env.close()
        assert engine_cache.idle_engine_count() == 1
        reused = AlfworldEnv(g)  # takes the engine just returned, resets it
        assert _play(reused, seed=i) == fresh[i]
        assert engine_cache.idle_engine_count() == 0
        assert _play(reused, seed=i) == fresh[i]  # and again after its own episode
        reused.close()
        engine_cache.clear_idle_engines()


def test_the_idle_bound_is_configurable_and_checked(tmp_path) -> None:
    class Engine:
        closed = False

        def close(self) -> None:
            self.closed = True

    engine_cache.clear_idle_engines()
    files = [tmp_path / f"g{i}.tw-pddl" for i in range(3)]
    engines = [Engine() for _ in files]
    for f, e in zip(files, engines):
        f.write_text("{}")
        engine_cache.give_engine(f, e, max_idle=1)
    assert engine_cache.idle_engine_count() == 1 and engines[0].closed and engines[1].closed and not engines[2].closed
    engine_cache.give_engine(files[0], Engine(), max_idle=0)
    assert engine_cache.idle_engine_count() == 0 and engines[2].closed  # 0: nothing kept
    with pytest.raises(ValueError, match="max_idle"):
        engine_cache.give_engine(files[0], Engine(), max_idle=-1)
    with pytest.raises(ValueError, match="max_idle_engines"):
        AlfworldEnv(list_games("valid_seen")[0], max_idle_engines=-1)
    assert engine_cache.MAX_IDLE_ENGINES >= 274 + 32  # a whole-split evaluation and the default's pool fit
