"""MiniWoB++ tasks: the curated list (easy to hard, with hints), every other shipped page, one's own page folders.

Any page the ``miniwob`` wheel ships can be named (``catalog.py`` lists them by family); the curated ones below carry
a level and hints, the others are ``Level.UNRATED`` without hints. Pages of one's own folder (``page_folder.py``) are
named together with their folder (``pages_dir``, carried by ``MiniwobTaskSpec``). Lists of tasks accept
task names and family names alike (:func:`select_tasks`).

The list runs from easy to hard (within a level, the trivial one-button ``click-test`` comes after the other easy
clicks). It is chosen so that a DOM-level agent (click an element, type a field value, press a key) can solve every
task: no drag, draw or canvas tasks. Families group tasks that exercise the same skill; a setting trains on some
families and evaluates out of domain on the others (``rlanything_core/conf/setting/miniwob.yaml``).

Each task carries hints, the paper's lever for making a GUI task easier without touching its checker: which element,
where it is, the order of the steps. The rule-based rewriter adds them one at a time (easier) or removes them
(harder). The library's own page ``rla-login-form`` also has difficulty settings (distractor fields, shuffled
order) that the rewriter moves within their ranges.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.miniwob.catalog import family_of, shipped_pages
from rlanything_core.envs.miniwob.curated import CURATED_TASKS, Level, MiniwobTask, Setting
from rlanything_core.envs.miniwob.page_folder import load_page_folder

__all__ = [
    "CURATED_TASKS",
    "Level",
    "MiniwobTask",
    "MiniwobTaskSpec",
    "Setting",
    "UnknownTaskError",
    "all_tasks",
    "resolve_task",
    "select_tasks",
]


class UnknownTaskError(ValueError):
    """A task or family name that no page carries (the message lists close names and the families)."""


@functools.cache
def _shipped_task(name: str) -> MiniwobTask:
    return MiniwobTask(name, family_of(name), Level.UNRATED, ())


def all_tasks(*, pages_dir: str | Path | None = None) -> dict[str, MiniwobTask]:
    """Every nameable task: the curated list (easy first), the wheel's other pages, then ``pages_dir``'s pages.

    Args:
        pages_dir: a folder of one's own pages (``page_folder.py``).

    Raises:
        PageFolderError: ``pages_dir`` is not a valid page folder.
    """
    order = {Level.EASY: 0, Level.MEDIUM: 1, Level.HARD: 2}
    out = {t.name: t for t in sorted(CURATED_TASKS.values(), key=lambda t: order[t.level])}
    for name in sorted(shipped_pages(), key=lambda n: (family_of(n), n)):
        out.setdefault(name, _shipped_task(name))
    if pages_dir is not None:
        out.update(load_page_folder(pages_dir))  # load_page_folder refuses names the wheel or the curated list have
    return out


def _unknown(what: str, name: str, known: dict[str, MiniwobTask]) -> UnknownTaskError:
    families = sorted({t.family for t in known.values()})
    close = difflib.get_close_matches(name, [*known, *families], n=5, cutoff=0.6)
    hint = f"close names: {', '.join(close)}; " if close else ""
    return UnknownTaskError(
        f"{what}: unknown MiniWoB++ task {name!r}; {hint}{len(known)} tasks can be named (all_tasks()), "
        f"in the families {', '.join(families)}"
    )


def resolve_task(name: str, *, pages_dir: str | Path | None = None) -> MiniwobTask:
    """The task named ``name``: curated, another page of the wheel, or a page of one's own folder.

    Args:
        name: the page name (``click-button``).
        pages_dir: a folder of one's own pages to look in first. A page of one's own is found only through its
            folder (two folders may hold pages of the same name, with different checkers).

    Raises:
        UnknownTaskError: no page has that name; the message lists close names and the families.
        PageFolderError: ``pages_dir`` is not a valid page folder.
    """
    if pages_dir is not None and name in (folder := load_page_folder(pages_dir)):
        return folder[name]
    if name in CURATED_TASKS:
        return CURATED_TASKS[name]
    if name in shipped_pages():
        return _shipped_task(name)
    raise _unknown("task", name, all_tasks(pages_dir=pages_dir))


def select_tasks(entries: Iterable[str], *, pages_dir: str | Path | None = None, key: str = "tasks") -> list[str]:
    """Task names from a list of task names and family names (a family stands for all its pages), in order.

    Args:
        entries: task names (``click-tab-2``) and families (``booking``), mixed.
        pages_dir: a folder of one's own pages whose names and families may appear.
        key: what the list is called, for the error message.

    Returns:
        The distinct task names: entries in their order, a family's pages in :func:`all_tasks` order.

    Raises:
        UnknownTaskError: an entry is neither a task nor a family (the message names the entry and ``key``).
    """
    known = all_tasks(pages_dir=pages_dir)
    families: dict[str, list[str]] = {}
    for task in known.values():
        families.setdefault(task.family, []).append(task.name)
    out: list[str] = []
    for entry in map(str, entries):
        if entry in known:
            out.append(entry)
        elif entry in families:
            out.extend(families[entry])
        else:
            raise _unknown(key, entry, known)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class MiniwobTaskSpec:
    """What one episode plays: a page, the seed of its random problem, hints, difficulty settings.

    Attributes:
        name: a task name (checked at construction: any shipped page, a curated one, or one of ``pages_dir``).
        seed: seeds the page's problem generator (``Math.seedrandom``): same spec, same page.
        hints: sentences appended to the page's instruction (the checker is untouched).
        settings: ``(name, value)`` pairs of an own page's difficulty settings (missing ones take the default).
        pages_dir: the folder of one's own pages the page comes from (``None``: the wheel's or this library's);
            carried in the spec so that worker processes and a reloaded pool find the page.
    """

    name: str
    seed: int = 0
    hints: tuple[str, ...] = ()
    settings: tuple[tuple[str, int], ...] = ()
    pages_dir: str | None = None

    def __post_init__(self) -> None:
        task = self.task
        for key, value in self.settings:
            if key not in task.settings:
                raise ValueError(
                    f"settings: task {self.name!r} has no setting {key!r} (it has {sorted(task.settings)})"
                )
            rng = task.settings[key]
            if not rng.low <= value <= rng.high:
                raise ValueError(f"settings[{key!r}]: expected {rng.low}..{rng.high}, got {value}")

    @property
    def task(self) -> MiniwobTask:
        """The task this spec plays."""
        return resolve_task(self.name, pages_dir=self.pages_dir)

    def resolved_settings(self) -> dict[str, int]:
        """Every setting of the page, the spec's values over the defaults."""
        values = {k: s.default for k, s in self.task.settings.items()}
        values.update(dict(self.settings))
        return values

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MiniwobTaskSpec:
        """Build from a pool task's ``data`` (``{"task", "seed", "hints", "settings"[, "pages_dir"]}``)."""
        settings = data.get("settings", {}) or {}
        pages_dir = data.get("pages_dir")
        return cls(
            name=str(data["task"]),
            seed=int(data.get("seed", 0)),
            hints=tuple(str(h) for h in data.get("hints", ())),
            settings=tuple(sorted((str(k), int(v)) for k, v in settings.items())),
            pages_dir=None if pages_dir is None else str(pages_dir),
        )

    def to_data(self) -> dict[str, Any]:
        """The pool task's ``data`` (JSON-ready; ``pages_dir`` only when set)."""
        data: dict[str, Any] = {"task": self.name, "seed": self.seed, "hints": list(self.hints),
                                "settings": dict(self.settings)}  # fmt: skip
        if self.pages_dir is not None:
            data["pages_dir"] = self.pages_dir
        return data
