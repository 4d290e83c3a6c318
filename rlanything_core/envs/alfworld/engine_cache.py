"""A process-local cache of idle ALFWorld engines, keyed by game file.

Loading a ``game.tw-pddl`` (parsing its PDDL and building the TextWorld state) costs ~1.5 s; resetting a loaded engine
costs ~0.35 s and gives the same initial state. The loop plays every task ``G`` times per iteration and the same
training and evaluation games again in later iterations, so :class:`~rlanything_core.envs.alfworld.env.AlfworldEnv`
hands its engine back here on ``close()`` and takes one from here on its next ``reset()``: a game is parsed once per
process, not once per episode. Engines are ~5 MiB each (an idle one holds no copy of fast-downward's library:
``downward_libraries``); the cache keeps at most :data:`MAX_IDLE_ENGINES` (or the
``max_idle`` its caller gives) and closes the least recently returned beyond that.

A load in a new process (each run of the ablation is one) parses the game's logic document with tatsu again:
:func:`memoize_logic_parsing` stores that parse on disk, keyed by content, so a load costs ~0.065 CPU s, not ~0.175.

The key includes the file's size and modification time, so a game file rewritten in place (environment adaptation
writes new files, but a user might not) is never served from a stale engine.

A reset itself spends most of its time translating the game's PDDL to SAS, twice (TextWorld's ``PddlState`` calls
``fast_downward.pddl2sas`` on every reset). The translation is a pure function of the domain and problem text and
its result is only read, so :func:`memoize_pddl_translation` caches it per process and on disk (a run's worker
process starts with an empty memory, and would otherwise translate every evaluation game again: ~0.43 s a game, ~6 CPU
minutes per run of the ablation): a reset then costs ~0.1-0.2 s.
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
import hashlib
import importlib.metadata
import pickle
import sys
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from rlanything_core.envs.alfworld.downward_libraries import release_library
from rlanything_core.files import atomic_write_bytes, cache_dir

__all__ = [
    "MAX_IDLE_ENGINES",
    "clear_idle_engines",
    "give_engine",
    "idle_engine_count",
    "lighten_grammar_derivation",
    "memoize_grammar_parsing",
    "memoize_logic_parsing",
    "memoize_pddl_translation",
    "take_engine",
    "translation_cache_dir",
]

MAX_IDLE_ENGINES = 320
"""Idle engines kept per process by default (~5 MiB each: 20 loaded ``valid_seen`` engines took 103 MiB more than 20
fewer). 320 holds a whole-split evaluation (274 games) and the default's training pool in one environment worker, so a
process that evaluates again resets its games instead of loading them; an LRU smaller than that cycle missed every
time (at 64, each evaluation loaded every game again). ``AlfworldEnvFactory(max_idle_engines=...)`` or
``setting.parts.environment.max_idle_engines`` set another bound."""

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


def give_engine(game_file: Path, engine: Any, *, max_idle: int | None = None) -> None:
    """Return an engine for reuse; beyond ``max_idle`` idle engines the least recently returned are closed.

    Args:
        game_file: the game the engine has loaded.
        engine: the engine (reset by the next :func:`take_engine` caller).
        max_idle: the bound on this process's idle engines (``None``: :data:`MAX_IDLE_ENGINES`; ``0``: keep none).

    Raises:
        ValueError: a negative ``max_idle``.
    """
    limit = MAX_IDLE_ENGINES if max_idle is None else max_idle
    if limit < 0:
        raise ValueError(f"max_idle: expected >= 0 or None, got {max_idle}")
    try:
        key = _key(game_file)
    except OSError:  # the file is gone: nothing can reuse this engine
        _close(engine)
        return
    release_library(engine)  # an idle engine needs no planner library until its next reset (downward_libraries)
    _IDLE.setdefault(key, []).append(engine)
    _IDLE.move_to_end(key)
    while idle_engine_count() > limit:
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


def translation_cache_dir() -> Path:
    """Where translations persist between processes: ``$RLANYTHING_CACHE/pddl2sas`` (~90 KiB a game; deletable)."""
    return cache_dir("pddl2sas")


@functools.cache  # the installed translator does not change within a process; the metadata lookup is a file read
def _translator_version() -> str:
    try:
        return importlib.metadata.version("fast-downward-textworld")
    except importlib.metadata.PackageNotFoundError:  # an unpackaged fast_downward: key on its source instead
        import fast_downward

        return hashlib.sha256(Path(fast_downward.__file__).read_bytes()).hexdigest()


def _stored_translation(translate: Any, domain: str, problem: str, optimize: bool) -> Any:
    """``translate(domain, problem, optimize=optimize)``, read from :func:`translation_cache_dir` when stored there.

    The key is the SHA-256 of the translator's version, the flag and both texts, so a different game, domain or
    fast-downward never reads another's entry. Entries are written atomically; one that cannot be read (a disk
    error, a pickle from another Python) is translated again and replaced. The folder is this user's cache, like
    pip's: entries are unpickled, so it must not be writable by anyone the user does not trust.
    """
    key = hashlib.sha256("\0".join((_translator_version(), str(optimize), domain, problem)).encode()).hexdigest()
    path = translation_cache_dir() / key[:2] / f"{key}.pickle.z"
    try:
        return pickle.loads(zlib.decompress(path.read_bytes()))
    except Exception:  # noqa: BLE001 - a missing or unreadable entry is only a cache miss; it is (re)written below
        pass
    argv = sys.argv
    try:
        value = translate(domain, problem, verbose=False, optimize=optimize)
    finally:  # fast_downward overwrites sys.argv to configure its translator (a command-line parser's reader)
        sys.argv = argv
    try:
        atomic_write_bytes(path, zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 6))
    except OSError:  # a read-only or full cache: the translation is still right, the next process only slower
        pass
    return value


def memoize_pddl_translation() -> None:
    """Cache ``fast_downward.pddl2sas`` in this process and on disk (idempotent).

    TextWorld looks the function up on the module at every reset, so replacing the module attribute is enough. The
    cached value (a translated task, read-only for TextWorld, and the SAS text) is shared by the engines of a game;
    a new process reads it from :func:`translation_cache_dir` (~3 ms) instead of translating again (~0.2 s each of
    the two translations per game). A verbose call (it prints the translator's log) is never stored on disk.
    """
    import fast_downward

    if getattr(fast_downward.pddl2sas, "__wrapped__", None) is not None:
        return
    translate = fast_downward.pddl2sas

    @functools.lru_cache(maxsize=_TRANSLATIONS)
    @functools.wraps(translate)
    def pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        if verbose:
            return translate(domain, problem, verbose=True, optimize=optimize)
        return _stored_translation(translate, domain, problem, optimize)

    fast_downward.pddl2sas = pddl2sas


_LOGIC_PARSES = 512
"""Parsed game logics kept per process (pickled, ~20 KiB each)."""


@functools.cache  # the installed TextWorld does not change within a process
def _textworld_version() -> str:
    try:
        return importlib.metadata.version("textworld")
    except importlib.metadata.PackageNotFoundError:  # an unpackaged textworld: key on its parser's source instead
        from textworld.envs.pddl.logic import parser

        return hashlib.sha256(Path(parser.__file__).read_bytes()).hexdigest()


def memoize_logic_parsing() -> None:
    """Cache the parse of a game's logic document (its actions and grammar) in this process and on disk (idempotent).

    Loading a game parses its ``grammar`` field with tatsu (``textworld.envs.pddl.logic._parse_and_convert``, looked
    up on the module by ``GameLogic``): ~55% of a load once the PDDL translations are cached, paid again by every
    process that loads the game (each run of the ablation is one). The parse is a pure function of the text; it is
    stored pickled (in memory and under ``$RLANYTHING_CACHE/tw_logic``, keyed by the SHA-256 of TextWorld's version
    and the text) and every load unpickles a fresh copy (~1 ms), so no two engines share a mutable object.
    """
    from textworld.envs.pddl import logic

    original = logic._parse_and_convert
    if getattr(original, "__wrapped__", None) is not None:
        return

    @functools.lru_cache(maxsize=_LOGIC_PARSES)
    def pickled(text: str, rule_name: str) -> bytes:
        key = hashlib.sha256("\0".join(("logic", _textworld_version(), rule_name, text)).encode()).hexdigest()
        path = cache_dir("tw_logic") / key[:2] / f"{key}.pickle.z"
        try:
            return zlib.decompress(path.read_bytes())
        except Exception:  # noqa: BLE001 - a missing or unreadable entry is only a miss; it is (re)written below
            pass
        value = pickle.dumps(original(text, rule_name=rule_name), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            atomic_write_bytes(path, zlib.compress(value, 6))
        except OSError:  # a read-only or full cache: the parse is still right, the next process only slower
            pass
        return value

    @functools.wraps(original)
    def parse(*args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or not isinstance(args[0], str) or set(kwargs) != {"rule_name"}:  # not GameLogic's call
            return original(*args, **kwargs)
        return pickle.loads(pickled(args[0], str(kwargs["rule_name"])))

    logic._parse_and_convert = parse


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
