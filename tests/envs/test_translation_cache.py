"""The on-disk PDDL-to-SAS translation cache: a stored translation is the translation, in this process and another."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _alfworld_fixtures import PENCIL, game, walkthrough

from rlanything_core.envs.alfworld import engine_cache

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


def _translator():
    import fast_downward

    return inspect.unwrap(fast_downward.pddl2sas)  # the real translator, under the memo and the disk cache


def _texts():
    data = json.loads(Path(game(PENCIL).game_file).read_text())
    return data["pddl_domain"], data["pddl_problem"]


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "pddl2sas").rglob("*.pickle.z"))


def test_a_stored_translation_equals_a_fresh_one_and_is_read_instead_of_translated(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path))
    real, calls = _translator(), []

    def counting(*args, **kwargs):
        calls.append(kwargs["optimize"])
        return real(*args, **kwargs)

    domain, problem = _texts()
    fresh_task, fresh_sas = real(domain, problem, optimize=False)
    first = engine_cache._stored_translation(counting, domain, problem, False)
    stored = engine_cache._stored_translation(counting, domain, problem, False)
    assert calls == [False] and len(_entries(tmp_path)) == 1  # translated once, then read back
    assert stored[1] == first[1] == fresh_sas
    assert [a.name for a in stored[0].actions] == [a.name for a in fresh_task.actions]
    assert [str(atom) for atom in stored[0].init] == [str(atom) for atom in fresh_task.init]
    optimized = engine_cache._stored_translation(counting, domain, problem, True)
    assert calls == [False, True] and len(_entries(tmp_path)) == 2  # the flag is part of the key
    assert optimized[1] == real(domain, problem, optimize=True)[1] != fresh_sas
    engine_cache._stored_translation(counting, domain, problem.replace("(:init", "(:init\n", 1), False)
    assert calls == [False, True, False]  # another problem text is another entry


def test_an_unreadable_entry_is_translated_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path))
    domain, problem = _texts()
    real = _translator()
    engine_cache._stored_translation(real, domain, problem, False)
    (entry,) = _entries(tmp_path)
    entry.write_bytes(b"torn")
    assert engine_cache._stored_translation(real, domain, problem, False)[1] == real(domain, problem)[1]
    assert entry.read_bytes() != b"torn"


_PLAY = """
import json, sys
import fast_downward
game_file, mode, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
from rlanything_core.envs.alfworld import AlfworldEnv
from rlanything_core.envs.alfworld.env import speed_up_engine
if mode == "forbid":  # every translation must come from the disk cache
    def refuse(*args, **kwargs):
        raise AssertionError("translated although the cache holds this game")
    fast_downward.pddl2sas = refuse
speed_up_engine()
env = AlfworldEnv(game_file)
first = env.reset()
steps = [env.step(a) for a in commands]
print(json.dumps([first.observation, list(first.admissible_actions)]
                 + [[s.observation, list(s.admissible_actions), s.won] for s in steps]))
"""


def test_a_new_process_plays_the_same_game_from_the_stored_translations(tmp_path):
    g = game(PENCIL)
    env = dict(os.environ, RLANYTHING_CACHE=str(tmp_path))

    def play(mode: str) -> list:
        out = subprocess.run([sys.executable, "-c", _PLAY, str(g.game_file), mode, json.dumps(walkthrough(g))],
                             env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = play("translate")
    assert len(_entries(tmp_path)) == 2  # the plain and the optimized translation of the one game
    assert play("forbid") == cold and cold[-1][2] is True  # the same observations, commands and win


def test_translating_leaves_the_command_line_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["train.py", "+setting=alfworld"])
    domain, problem = _texts()
    engine_cache._stored_translation(_translator(), domain, problem, False)  # fast_downward rewrites sys.argv
    assert sys.argv == ["train.py", "+setting=alfworld"]
