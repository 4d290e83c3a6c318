"""The curated MiniWoB++ task list (easy to hard), their families, their hints, and the task spec an episode plays.

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

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "CURATED_TASKS",
    "Level",
    "MiniwobTask",
    "MiniwobTaskSpec",
    "Setting",
    "UnknownTaskError",
    "resolve_task",
]


class Level(str, Enum):
    """How hard a task is for a DOM-level agent (steps needed, distractors, pages to search)."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


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
    """

    name: str
    family: str
    level: Level
    hints: tuple[str, ...]
    own_page: bool = False
    settings: dict[str, Setting] = field(default_factory=dict)


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
    """A task name that is not in the curated list (the message lists the curated names)."""


def resolve_task(name: str) -> MiniwobTask:
    """The curated task named ``name``.

    Raises:
        UnknownTaskError: ``name`` is not curated; the message lists every curated name, easy first.
    """
    task = CURATED_TASKS.get(name)
    if task is None:
        order = {Level.EASY: 0, Level.MEDIUM: 1, Level.HARD: 2}
        names = ", ".join(t.name for t in sorted(CURATED_TASKS.values(), key=lambda t: order[t.level]))
        raise UnknownTaskError(f"task: unknown MiniWoB++ task {name!r}; the curated tasks are: {names}")
    return task


@dataclass(frozen=True)
class MiniwobTaskSpec:
    """What one episode plays: a curated page, the seed of its random problem, hints, difficulty settings.

    Attributes:
        name: a curated task name (checked at construction).
        seed: seeds the page's problem generator (``Math.seedrandom``): same spec, same page.
        hints: sentences appended to the page's instruction (the checker is untouched).
        settings: ``(name, value)`` pairs of an own page's difficulty settings (missing ones take the default).
    """

    name: str
    seed: int = 0
    hints: tuple[str, ...] = ()
    settings: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        task = resolve_task(self.name)
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
        """The curated task."""
        return resolve_task(self.name)

    def resolved_settings(self) -> dict[str, int]:
        """Every setting of the page, the spec's values over the defaults."""
        values = {k: s.default for k, s in self.task.settings.items()}
        values.update(dict(self.settings))
        return values

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> MiniwobTaskSpec:
        """Build from a pool task's ``data`` (``{"task", "seed", "hints", "settings"}``)."""
        settings = data.get("settings", {}) or {}
        return cls(
            name=str(data["task"]),
            seed=int(data.get("seed", 0)),
            hints=tuple(str(h) for h in data.get("hints", ())),
            settings=tuple(sorted((str(k), int(v)) for k, v in settings.items())),
        )

    def to_data(self) -> dict[str, Any]:
        """The pool task's ``data`` (JSON-ready)."""
        return {"task": self.name, "seed": self.seed, "hints": list(self.hints), "settings": dict(self.settings)}
