"""A process-local cache of idle ALFWorld engines, keyed by game file.

Loading a ``game.tw-pddl`` (parsing its PDDL and building the TextWorld state) costs ~1.5 s; resetting a loaded engine
costs ~0.35 s and gives the same initial state. The loop plays every task ``G`` times per iteration and the same
training and evaluation games again in later iterations, so :class:`~rlanything_core.envs.alfworld.env.AlfworldEnv`
hands its engine back here on ``close()`` and takes one from here on its next ``reset()``: a game is parsed once per
process, not once per episode. Engines are ~10 MiB each; the cache keeps at most :data:`MAX_IDLE_ENGINES` and closes
the least recently returned beyond that.

The key includes the file's size and modification time, so a game file rewritten in place (environment adaptation
writes new files, but a user might not) is never served from a stale engine.

A reset itself spends most of its time translating the game's PDDL to SAS, twice (TextWorld's ``PddlState`` calls
``fast_downward.pddl2sas`` on every reset). The translation is a pure function of the domain and problem text and
its result is only read, so :func:`memoize_pddl_translation` caches it per process: a reset then costs ~0.1-0.2 s.
Every step also re-parses the text grammar's templates with tatsu (the feedback and every admissible command);
:func:`memoize_grammar_parsing` parses each template once and hands out copies: a step then costs ~20 ms, not ~36 ms
(the same observations and commands, checked by the tests). Deriving each text then parses the grammar's condition
queries with tatsu again and deep-copies every derivation context; :func:`lighten_grammar_derivation` parses each
query once and copies contexts one level deep (their values are only read): ~1.5-1.9x fewer seconds per step, the
same text.
"""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_IDLE_ENGINES",
    "clear_idle_engines",
    "give_engine",
    "idle_engine_count",
    "lighten_grammar_derivation",
    "memoize_grammar_parsing",
    "memoize_pddl_translation",
    "take_engine",
]

MAX_IDLE_ENGINES = 64
"""Idle engines kept per process (~10 MiB each)."""

_EngineKey = tuple[str, int, int]
_IDLE: OrderedDict[_EngineKey, list[Any]] = OrderedDict()


def _key(game_file: Path) -> _EngineKey:
    stat = game_file.stat()
    return (str(game_file.resolve()), stat.st_size, stat.st_mtime_ns)


def take_engine(game_file: Path) -> Any | None:
    """An idle engine already loaded with ``game_file`` (to be reset by the caller), or ``None``."""
    engines = _IDLE.get(_key(game_file))
    if not engines:
        return None
    engine = engines.pop()
    if not engines:
        del _IDLE[_key(game_file)]
    return engine


def give_engine(game_file: Path, engine: Any) -> None:
    """Return an engine for reuse; beyond :data:`MAX_IDLE_ENGINES` the least recently returned are closed."""
    try:
        key = _key(game_file)
    except OSError:  # the file is gone: nothing can reuse this engine
        _close(engine)
        return
    _IDLE.setdefault(key, []).append(engine)
    _IDLE.move_to_end(key)
    while idle_engine_count() > MAX_IDLE_ENGINES:
        oldest = next(iter(_IDLE))
        _close(_IDLE[oldest].pop(0))
        if not _IDLE[oldest]:
            del _IDLE[oldest]


def idle_engine_count() -> int:
    """Engines waiting in this process's cache."""
    return sum(len(v) for v in _IDLE.values())


def clear_idle_engines() -> None:
    """Close every idle engine (frees memory; the next resets load their games again)."""
    for engines in _IDLE.values():
        for engine in engines:
            _close(engine)
    _IDLE.clear()


def _close(engine: Any) -> None:
    try:
        engine.close()
    except Exception:  # noqa: BLE001 - closing a broken engine must not fail the caller
        pass


_TRANSLATIONS = 1024
"""PDDL-to-SAS translations kept per process (about two per game: 512 games). An evaluation cycles through its games
in order, and an LRU smaller than the cycle misses every time: at 128 entries the 128 games of the ablation's
evaluation were translated again at every evaluation (~1 s a reset); at 1024 a repeated reset costs ~0.03 s, for
~0.1 GiB more memory (80 ``valid_seen`` games reset twice in one process: 1.16 then 1.16 s per reset at 128, 0.94
then 0.03 s at 1024; ``python -m benchmarks.alfworld_resets``)."""


def memoize_pddl_translation() -> None:
    """Cache ``fast_downward.pddl2sas`` in this process (idempotent).

    TextWorld looks the function up on the module at every reset, so replacing the module attribute is enough. The
    cached value (a translated task, read-only for TextWorld, and the SAS text) is shared by the engines of a game.
    """
    import fast_downward

    if getattr(fast_downward.pddl2sas, "__wrapped__", None) is not None:
        return
    fast_downward.pddl2sas = functools.lru_cache(maxsize=_TRANSLATIONS)(fast_downward.pddl2sas)


_TEMPLATES: dict[tuple[str, Any, Any], Any] = {}
_MAX_TEMPLATES = 4096


def memoize_grammar_parsing() -> None:
    """Cache the parse of TextWorld's text-grammar templates in this process (idempotent).

    ``textgen._parse_and_convert`` turns a template into a fresh list of symbols that the caller then mutates (it sets
    each symbol's context), so the cache keeps a pristine parse and returns a deep copy, which is still ~2x cheaper
    than tatsu parsing the template again.
    """
    from textworld.envs.pddl import textgen

    original = textgen._parse_and_convert
    if getattr(original, "__wrapped__", None) is not None:
        return

    @functools.wraps(original)
    def parse(text: str, rule_name: Any = None, trace: Any = False, **kwargs: Any) -> Any:
        if kwargs or not isinstance(text, str):
            return original(text, rule_name=rule_name, trace=trace, **kwargs)
        key = (text, rule_name, trace)
        if key not in _TEMPLATES:
            if len(_TEMPLATES) >= _MAX_TEMPLATES:  # ALFWorld's grammar has a few dozen; a bound all the same
                _TEMPLATES.clear()
            _TEMPLATES[key] = original(text, rule_name=rule_name, trace=trace)
        return copy.deepcopy(_TEMPLATES[key])

    textgen._parse_and_convert = parse


def lighten_grammar_derivation() -> None:
    """Make TextWorld's text derivation cheaper in this process (idempotent; the same text, checked by the tests).

    ``textgen`` looks both names up on its module at every call, so replacing the module attributes is enough:

    - ``Rule.parse_conjunctive_query`` parses the same few dozen condition strings with tatsu on every derivation.
      Its result is only read (``State.all_assignments`` copies the mapping it is given), so one parse is shared.
    - ``copy_context`` deep-copies the ``variables`` and ``mapping`` dicts of every derivation context. ``textgen``
      only adds keys to the copies (``dict.update``) and reads the values (entity infos, placeholders, variables),
      so a one-level copy isolates the derivations just as well.
    """
    from textworld.envs.pddl import textgen

    if getattr(textgen.copy_context, "__wrapped__", None) is not None:
        return
    deep_copy_context = textgen.copy_context

    @functools.wraps(deep_copy_context)
    def copy_context(context: dict[str, Any]) -> dict[str, Any]:
        return {"state": context["state"], "facts": context["facts"], "variables": dict(context["variables"]),
                "mapping": dict(context["mapping"]), "entity_infos": context["entity_infos"]}

    class _CachedQueries:  # textgen uses its module global ``Rule`` only for this one class method
        parse_conjunctive_query = staticmethod(functools.lru_cache(maxsize=_MAX_TEMPLATES)(
            textgen.Rule.parse_conjunctive_query))

    textgen.copy_context = copy_context
    textgen.Rule = _CachedQueries
