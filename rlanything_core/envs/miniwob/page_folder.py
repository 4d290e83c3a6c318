"""One's own MiniWoB-style pages from a folder: validated at load, then named (with their folder) like the wheel's.

A page folder holds ``<name>.html`` files written like the wheel's pages: they load ``../core/core.js`` (and may load
``../core/...`` and ``../common/...``: the environment serves the folder beside the wheel's ``core/`` and ``common/``),
define ``genProblem()``, which builds the problem from ``Math.random`` (seeded per episode), and end the episode with
``core.endEpisode(reward)``, the checker (reward in ``[-1, 1]``, won when ``> 0``). Settings the environment may vary
are read from ``window.RLA_SETTINGS`` (see ``pages/rla-login-form.html``).

An optional ``tasks.json`` beside the pages describes them::

    {"my-form": {"family": "my-forms", "level": "medium", "hints": ["The Submit button is at the bottom."],
                 "settings": {"distractors": {"default": 1, "low": 0, "high": 4}}}}

Every key is optional; a page without an entry is in family ``own``, ``unrated``, without hints or settings.
:func:`load_page_folder` refuses, naming the file and what is wrong: a missing or empty folder, a page name that is
not a plain name or that a shipped or curated page already has, a page that does not load ``core/core.js``, define
``genProblem`` or call ``core.endEpisode``, and a ``tasks.json`` that is not JSON, names a page the folder lacks,
or has an unknown key, a wrong type or a setting whose default is outside its range.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rlanything_core.envs.miniwob.catalog import shipped_pages
from rlanything_core.envs.miniwob.curated import CURATED_TASKS, Level, MiniwobTask, Setting

__all__ = ["MANIFEST", "OWN_FAMILY", "PageFolderError", "load_page_folder"]

MANIFEST = "tasks.json"
OWN_FAMILY = "own"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_ENTRY_KEYS = {"family", "level", "hints", "settings"}
_REQUIRED = (
    (re.compile(r"""<script[^>]+src=["']\.\./core/core\.js["']"""), 'load "../core/core.js" with a <script> tag'),
    (re.compile(r"\bgenProblem\s*=|function\s+genProblem\b"), "define genProblem (the problem generator)"),
    (re.compile(r"\bcore\.endEpisode\s*\("), "call core.endEpisode(reward) (the checker)"),
)
_CACHE: dict[str, tuple[tuple[float, ...], dict[str, MiniwobTask]]] = {}


class PageFolderError(ValueError):
    """A page folder (or its ``tasks.json``) that cannot be used; the message names the file and the fault."""


def _stamp(folder: Path) -> tuple[float, ...]:
    files = sorted([*folder.glob("*.html"), folder / MANIFEST])
    return tuple(f.stat().st_mtime for f in files if f.exists()) + (folder.stat().st_mtime,)


def load_page_folder(folder: str | Path) -> dict[str, MiniwobTask]:
    """The pages of ``folder`` as tasks (name -> task), validated; loaded once per change of the folder.

    Raises:
        PageFolderError: the folder, a page or ``tasks.json`` is invalid (the message names which and why).
    """
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise PageFolderError(f"pages_dir: {str(folder)!r} is not a folder")
    path = path.resolve()
    stamp = _stamp(path)
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    pages = sorted(path.glob("*.html"))
    if not pages:
        raise PageFolderError(f"pages_dir: {str(path)!r} holds no .html page")
    manifest = _read_manifest(path / MANIFEST)
    names = {p.stem for p in pages}
    missing = sorted(set(manifest) - names)
    if missing:
        raise PageFolderError(f"{path / MANIFEST}: describes pages the folder lacks: {missing}")
    tasks = {}
    for page in pages:
        _check_page(page)
        entry = manifest.get(page.stem, {})
        tasks[page.stem] = MiniwobTask(
            page.stem, entry.get("family", OWN_FAMILY), Level(entry.get("level", Level.UNRATED.value)),
            tuple(entry.get("hints", ())), own_page=True, settings=entry.get("settings", {}), folder=str(path),
        )  # fmt: skip
    _CACHE[str(path)] = (stamp, tasks)
    return tasks


def _check_page(page: Path) -> None:
    name = page.stem
    if not _NAME.match(name):
        raise PageFolderError(f"{page}: page name {name!r} must be lower-case letters, digits, '-' or '_'")
    if name in CURATED_TASKS or name in shipped_pages():
        raise PageFolderError(f"{page}: {name!r} is already a MiniWoB++ page; rename the file")
    text = page.read_text(encoding="utf-8", errors="replace")
    for pattern, what in _REQUIRED:
        if not pattern.search(text):
            raise PageFolderError(f"{page}: not a MiniWoB-style page: it must {what}")


def _read_manifest(file: Path) -> dict[str, dict[str, Any]]:
    if not file.exists():
        return {}
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PageFolderError(f"{file}: not valid JSON: {err}") from err
    if not isinstance(raw, dict):
        raise PageFolderError(f"{file}: expected an object of page name -> description, got {type(raw).__name__}")
    return {str(name): _entry(file, str(name), entry) for name, entry in raw.items()}


def _entry(file: Path, name: str, entry: Any) -> dict[str, Any]:
    where = f"{file}: [{name!r}]"
    if not isinstance(entry, dict):
        raise PageFolderError(f"{where}: expected an object, got {type(entry).__name__}")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise PageFolderError(f"{where}: unknown keys {unknown} (allowed: {sorted(_ENTRY_KEYS)})")
    out: dict[str, Any] = {}
    if "family" in entry:
        if not isinstance(entry["family"], str) or not _NAME.match(entry["family"]):
            raise PageFolderError(f"{where}.family: expected a plain lower-case name, got {entry['family']!r}")
        out["family"] = entry["family"]
    if "level" in entry:
        levels = [lv.value for lv in Level]
        if entry["level"] not in levels:
            raise PageFolderError(f"{where}.level: expected one of {levels}, got {entry['level']!r}")
        out["level"] = entry["level"]
    if "hints" in entry:
        hints = entry["hints"]
        if not isinstance(hints, list) or not all(isinstance(h, str) and h.strip() for h in hints):
            raise PageFolderError(f"{where}.hints: expected a list of non-empty strings, got {hints!r}"[:300])
        out["hints"] = hints
    if "settings" in entry:
        out["settings"] = _settings(where, entry["settings"])
    return out


def _settings(where: str, raw: Any) -> dict[str, Setting]:
    if not isinstance(raw, dict):
        raise PageFolderError(f"{where}.settings: expected an object of name -> {{default, low, high}}")
    out = {}
    for key, rng in raw.items():
        ok = isinstance(rng, dict) and set(rng) == {"default", "low", "high"}
        ok = ok and all(isinstance(v, int) and not isinstance(v, bool) for v in rng.values())
        if not ok or not rng["low"] <= rng["default"] <= rng["high"]:
            raise PageFolderError(
                f"{where}.settings[{key!r}]: expected integers {{default, low, high}} with low <= default <= high, "
                f"got {rng!r}"
            )
        out[str(key)] = Setting(rng["default"], rng["low"], rng["high"])
    return out
