"""fast-downward's library copies handed from engine to engine (``envs/alfworld/downward_libraries.py``).

Each copy TextWorld's ``load_lib`` makes stays on the temporary folder's disk (deleted, still mapped) until the process
exits; with the hand-on, engines started one after the other share one copy, engines in use at once keep their own,
and every engine plays (and the planner answers) as on a fresh copy of its own.
"""

from __future__ import annotations

import inspect
import random
from typing import Any

import pytest
from _alfworld_fixtures import CD, PENCIL, SOAP, SPRAY, game

from benchmarks.downward_copies import mapped_copies
from rlanything_core.envs.alfworld import engine_cache, start_engine
from rlanything_core.envs.alfworld.downward_libraries import loaded_copies, release_library

pytestmark = [pytest.mark.alfworld]


def _play(engine: Any, seed: int, steps: int = 6) -> list[tuple[str, tuple[str, ...], bool]]:
    rng = random.Random(seed)
    state = engine.reset()
    trace = [(str(state.feedback), tuple(state["admissible_commands"]), bool(state["won"]))]
    for _ in range(steps):
        state, _, done = engine.step(rng.choice(trace[-1][1]))
        trace.append((str(state.feedback), tuple(state["admissible_commands"]), bool(state["won"])))
        if done:
            break
    return trace


def test_engines_started_one_after_another_share_one_copy_and_engines_in_use_keep_their_own() -> None:
    engine_cache.clear_idle_engines()
    files = [game(name).game_file for name in (PENCIL, CD, SPRAY, SOAP)]
    first = start_engine(files[0])
    first.reset()
    first.close()
    loaded, mapped = loaded_copies(), mapped_copies()
    for f in files:  # one at a time: each takes the copy the last one gave back
        engine = start_engine(f)
        engine.reset()
        engine.close()
    assert loaded_copies() == loaded and mapped_copies() == mapped
    a, b = start_engine(files[0]), start_engine(files[1])  # two in use at once: two copies
    assert a.unwrapped.downward_lib is not b.unwrapped.downward_lib
    release_library(a)  # kept idle: its copy goes to the next engine started
    c = start_engine(files[2])
    assert c.unwrapped.downward_lib is not b.unwrapped.downward_lib
    assert loaded_copies() <= loaded + 1
    for engine in (a, b, c):
        engine.close()


def test_without_the_hand_on_every_load_maps_a_copy_of_its_own() -> None:
    """The leak the hand-on stops: TextWorld's own ``load_lib`` leaves one more deleted copy mapped per call."""
    import fast_downward

    start_engine(game(PENCIL).game_file).close()  # installs the hand-on, which keeps TextWorld's function
    original = inspect.unwrap(fast_downward.load_lib)
    assert original is not fast_downward.load_lib
    before = mapped_copies()
    kept = [original(), original()]
    assert mapped_copies() == before + 2 and kept[0] is not kept[1]


def test_a_handed_on_copy_plays_and_plans_like_a_fresh_one_interleaved_with_other_engines() -> None:
    engine_cache.clear_idle_engines()
    pencil, cd, soap = (game(n).game_file for n in (PENCIL, CD, SOAP))
    alone = {}
    for i, f in enumerate((pencil, cd)):
        engine = start_engine(f)
        alone[i] = _play(engine, seed=i)
        engine.close()
    plan = start_engine(soap, policy_commands=True)
    fresh_plan = plan.reset()["policy_commands"]
    plan.close()

    other = start_engine(soap)  # mid-game on a copy while the others start, play and give theirs back
    _play(other, seed=7, steps=3)
    engines = [start_engine(pencil), start_engine(cd)]
    for engine in engines:
        engine.reset()
    rngs = [random.Random(0), random.Random(1)]
    traces: list[list[tuple[str, tuple[str, ...], bool]]] = [[], []]
    for i, engine in enumerate(engines):
        state = engine.reset()
        traces[i].append((str(state.feedback), tuple(state["admissible_commands"]), bool(state["won"])))
    for _ in range(6):  # stepped alternately: each copy holds its own game's state
        for i, engine in enumerate(engines):
            if len(traces[i]) > 6 or traces[i][-1][2]:
                continue
            state, _, _ = engine.step(rngs[i].choice(traces[i][-1][1]))
            traces[i].append((str(state.feedback), tuple(state["admissible_commands"]), bool(state["won"])))
    assert traces[0] == alone[0][: len(traces[0])] and traces[1] == alone[1][: len(traces[1])]
    for engine in engines:
        engine.close()
    replanned = start_engine(soap, policy_commands=True)  # the planner on a copy that served other games
    assert replanned.reset()["policy_commands"] == fresh_plan
    replanned.close()
    other.close()


def test_an_engine_that_gave_its_copy_back_refuses_a_step_until_it_is_reset() -> None:
    engine = start_engine(game(PENCIL).game_file)
    state = engine.reset()
    release_library(engine)
    with pytest.raises(RuntimeError, match="reset it first"):
        engine.step(state["admissible_commands"][0])
    engine.reset()  # takes a copy again
    engine.step(state["admissible_commands"][0])
    engine.close()
    with pytest.raises(RuntimeError, match="reset it first"):
        engine.step(state["admissible_commands"][0])
