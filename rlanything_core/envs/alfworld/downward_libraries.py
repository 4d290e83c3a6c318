"""fast-downward's shared library: as many loaded copies as engines in use at once, handed from engine to engine.

TextWorld's PDDL engine keeps its game's state in the globals of fast-downward's shared library, so every engine has
a copy of its own: ``fast_downward.load_lib`` copies ``libdownward.so`` (33.8 MB) to a temporary folder, loads it and
deletes the file. A loaded library is never unloaded (ctypes has no ``dlclose``), so each deleted copy keeps its 33.8
MB of the temporary folder's disk until the process exits: one per engine the process ever started. The step
records' expert replays start an engine per episode (576 in a 36-iteration run, 19 GB), the evaluation one per game
(274, 9 GB); three runs at once filled a 74 GB disk (``OSError: [Errno 28] No space left on device`` in
``load_lib``'s copy, which killed the runs).

An engine reads its library only from a reset (or load) on: ``PddlEnv.reset`` builds a new ``PddlState``, which loads
the game into the library (``load_sas``) before anything reads it. So :func:`reuse_downward_libraries` makes a closed
engine give its copy back, and :func:`release_library` lets an idle engine (kept in ``engine_cache`` for its next
episode) give it back too; an engine without a copy takes one at its next reset or load, a new copy being made only
when every loaded one is in use. The copies are then as many as the engines in use at once (an iteration's group,
an evaluation's batch). The same observations, commands and planner answers as with a copy per engine (the tests play
games on handed-on copies against fresh ones).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["loaded_copies", "release_library", "reuse_downward_libraries"]

_FREE: list[Any] = []  # loaded copies that no engine holds
_INSTALLED: list[bool] = []  # non-empty once installed in this process
_LOADED = [0]  # copies this process loaded (each holds 33.8 MB of the temporary folder until exit)


def loaded_copies() -> int:
    """How many copies of the library this process loaded since :func:`reuse_downward_libraries` was installed."""
    return _LOADED[0]


def _take() -> Any:
    import fast_downward

    if _FREE:
        return _FREE.pop()
    _LOADED[0] += 1
    return fast_downward.load_lib.__wrapped__()


def _pddl_env(engine: Any) -> Any:
    """The ``PddlEnv`` inside ALFWorld's wrappers (or ``engine`` itself)."""
    return getattr(engine, "unwrapped", engine)


def release_library(engine: Any) -> None:
    """Give ``engine``'s copy back for other engines; it takes one again at its next reset (idempotent).

    For an engine that is kept but not played until its next reset (``engine_cache.give_engine``).
    """
    env = _pddl_env(engine)
    lib = env.__dict__.get("downward_lib")
    if lib is not None:
        env.downward_lib = None
        _FREE.append(lib)


def reuse_downward_libraries() -> None:
    """Install the hand-on in this process: ``fast_downward.load_lib``, ``PddlEnv``'s reset, load, step and close.

    Idempotent. A step of an engine that handed its copy on (closed, or released and not reset since) raises
    ``RuntimeError`` instead of reading another engine's state.
    """
    import fast_downward
    from textworld.envs.pddl.pddl import PddlEnv

    if _INSTALLED:  # a flag, not the functions' own marks: a caller that restored TextWorld's keeps it restored
        return
    _INSTALLED.append(True)
    load_lib = fast_downward.load_lib

    @functools.wraps(load_lib)
    def handed_on_load_lib() -> Any:  # PddlEnv.__init__ looks it up on the module
        return _take()

    fast_downward.load_lib = handed_on_load_lib

    def holding_a_copy(method: Any) -> Any:
        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self.__dict__.get("downward_lib") is None:
                self.downward_lib = _take()
            return method(self, *args, **kwargs)

        return run

    step = PddlEnv.step

    @functools.wraps(step)
    def step_holding_a_copy(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.__dict__.get("downward_lib") is None:  # its state would be read from a copy another engine now uses
            raise RuntimeError("a PDDL engine was stepped after it handed its library on: reset it first")
        return step(self, *args, **kwargs)

    close = PddlEnv.close

    @functools.wraps(close)
    def close_and_hand_on(self: Any) -> None:
        release_library(self)
        close(self)

    PddlEnv.reset = holding_a_copy(PddlEnv.reset)
    PddlEnv.load = holding_a_copy(PddlEnv.load)
    PddlEnv.step = step_holding_a_copy
    PddlEnv.close = close_and_hand_on
