"""MiniWoB++ tasks: the curated list (easy to hard, with hints), every other shipped page, one's own page folders.

Any page the ``miniwob`` wheel ships can be named (``catalog.py`` lists them by family); the curated ones below carry
a level and hints, the others are ``Level.UNRATED`` without hints. Pages of one's own folder (``page_folder.py``) are
named together with their folder (``pages_dir``, carried by ``MiniwobTaskSpec``). Lists of tasks accept
task names and family names alike (:func:`select_tasks`).

The list runs from easy to hard (within a level, the trivial one-button ``click-test`` comes after the other easy
clicks). It is chosen so that a DOM-level agent (click an element, type a field value, press a key) can solve every
task: no drag, draw or canvas tasks. Families group tasks that exercise the same skill; a setting trains on some
families and evaluates out of domain on the others (``experiments/conf/setting/miniwob.yaml``).

Each task carries hints, the paper's lever for making a GUI task easier without touching its checker: which element,
where it is, the order of the steps. The rule-based rewriter adds them one at a time (easier) or removes them
(harder). The library's own page ``rla-login-form`` also has difficulty settings (distractor fields, shuffled
order) that the rewriter moves within their ranges.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from rlanything_core.envs.miniwob.catalog import family_of, shipped_pages

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


class Level(str, Enum):
    """How hard a task is for a DOM-level agent (steps needed, distractors, pages to search)."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    UNRATED = "unrated"  # a shipped page outside the curated list, or one's own page without a level


@dataclass(frozen=True)
class Setting:
    """One difficulty setting of a parameterized page: its default and its range (inclusive)."""

    default: int
    low: int
    high: int


@dataclass(frozen=True)
class MiniwobTask:
    """One curated task.

    Attributes:
        name: the page name (``click-button`` is ``click-button.html``).
        family: the skill group (in-domain / out-of-domain splits are made of families).
        level: easy / medium / hard.
        hints: hints of increasing help, in the order the easier rewrites add them.
        own_page: the page is one of this library's (``pages/``), served beside the wheel's ``core/`` and ``common/``.
        settings: difficulty settings of an own page (``name -> Setting``); harder means higher.
        folder: the folder holding ``<name>.html`` for a page of one's own folder (``None``: the wheel's or this
            library's page).
    """

    name: str
    family: str
    level: Level
    hints: tuple[str, ...]
    own_page: bool = False
    settings: dict[str, Setting] = field(default_factory=dict)
    folder: str | None = None


def _t(name: str, family: str, level: Level, *hints: str, **settings: Setting) -> MiniwobTask:
    return MiniwobTask(name, family, level, hints, own_page=name.startswith("rla-"), settings=dict(settings))


E, M, H = Level.EASY, Level.MEDIUM, Level.HARD
CURATED_TASKS: dict[str, MiniwobTask] = {
    t.name: t
    for t in (
        _t("click-button", "click", E, "The answer is a button element.",
           "Click the button whose text is the word in quotes; ignore the other buttons."),
        _t("click-link", "click", E, "Links are span elements with class alink.",
           "Click the link whose text is the word in quotes; nothing else is needed."),
        _t("click-dialog", "click", E, "The dialog's close button is the button element in its title bar.",
           "Click that button element (its icon reads Close); nothing else is needed."),
        _t("click-test", "click", E, "Click the element whose tag is button.", "There is only one button: click it."),
        _t("focus-text", "text-entry", E, "The text box is the element with tag 'input_text'.",
           "Click the input_text element; nothing needs typing."),
        _t("enter-text", "text-entry", E, "The text box is the element with tag 'input_text'.",
           "First type the quoted text into the input_text element, then click the Submit button."),
        _t("enter-password", "text-entry", M, "There are two password boxes (input_password) and a Submit button.",
           "Type the password into both input_password elements, then click Submit."),
        _t("login-user", "login", M, "The username box is input_text, the password box is input_password.",
           "Order: type the username into input_text, then the password into input_password, then click Login."),
        _t("rla-login-form", "login", M, "The username box has id 'username', the password box has id 'password'.",
           "Order: type the username into the box with id username, the password into the box with id password, "
           "then click Login; leave the other boxes empty.",
           distractors=Setting(1, 0, 4), shuffle=Setting(0, 0, 1)),
        _t("click-checkboxes", "checkboxes", M, "Checkboxes are input_checkbox elements, "
           "each followed by its label text.",
           "Click each checkbox whose label text is listed, and no other, then click the Submit button."),
        _t("click-option", "checkboxes", M, "Options are input_radio elements, each followed by its label text.",
           "Click the input_radio whose label is the quoted word, then click Submit."),
        _t("click-tab-2-easy", "tabs", M, "Tabs are the a elements at the top; "
           "links are span elements with class alink.",
           "If the quoted link is not shown, click another tab; then click the span whose text is the quoted word."),
        _t("click-tab-2-medium", "tabs", H, "Tabs are the a elements at the top; "
           "links are span elements with class alink.",
           "Click each tab in turn until the quoted link shows up, then click the link."),
        _t("click-tab-2-hard", "tabs", H, "Tabs are the a elements at the top; "
           "links are span elements with class alink.",
           "Click each tab in turn until the exact quoted link shows up, then click it; or click no link if none."),
        _t("choose-date-easy", "dates", M, "The box with id datepicker is read-only: clicking it opens a calendar.",
           "Order: click the datepicker box, click the a element whose text is the day, then click Submit."),
        _t("choose-date-medium", "dates", H, "The box with id datepicker is read-only: clicking it opens a calendar.",
           "Order: click the datepicker box, click Prev or Next until the month shows, click the day, then Submit."),
        _t("email-inbox", "email", H, "Emails are rows: a div with class email-sender, then the row's "
           "span.trash and span.star icons.",
           "Open the email from the named sender, then use the action the instruction asks for (reply, forward, "
           "star, delete)."),
        _t("email-inbox-delete", "email", H, "Emails are rows: a div with class email-sender, then the row's "
           "span.trash and span.star icons.",
           "Click the span with class trash that follows the named sender's email-sender div."),
        _t("email-inbox-forward-nl", "email", H, "Emails are rows: a div with class email-sender; "
           "click the sender to open the email.",
           "Open the named sender's email, click Forward, type the recipient into the 'to' box, click Send."),
    )
}  # fmt: skip


class UnknownTaskError(ValueError):
    """A task or family name that no page carries (the message lists close names and the families)."""


@functools.cache
def _shipped_task(name: str) -> MiniwobTask:
    return MiniwobTask(name, family_of(name), Level.UNRATED, ())


def _own_folder(pages_dir: str | Path) -> dict[str, MiniwobTask]:
    from rlanything_core.envs.miniwob.page_folder import load_page_folder

    return load_page_folder(pages_dir)


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
        out.update(_own_folder(pages_dir))  # load_page_folder refuses names the wheel or the curated list have
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
    if pages_dir is not None and name in (folder := _own_folder(pages_dir)):
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
