"""The curated MiniWoB++ tasks (easy to hard, with hints) and the types that describe a task.

The data half of ``tasks.py`` (which resolves names over these, the wheel's other pages and one's own folders), kept
apart so that ``page_folder.py`` can build tasks without importing the lookups that load page folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["CURATED_TASKS", "Level", "MiniwobTask", "Setting"]


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


# first hints that several tasks of one family share (one wording, so that a fix reaches all of them)
_TEXT_BOX = "The text box is the element with tag 'input_text'."
_TABS = "Tabs are the a elements at the top; links are span elements with class alink."
_DATEPICKER = "The box with id datepicker is read-only: clicking it opens a calendar."
_EMAIL_ROWS = "Emails are rows: a div with class email-sender, then the row's span.trash and span.star icons."

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
        _t("focus-text", "text-entry", E, _TEXT_BOX,
           "Click the input_text element; nothing needs typing."),
        _t("enter-text", "text-entry", E, _TEXT_BOX,
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
        _t("click-tab-2-easy", "tabs", M, _TABS,
           "If the quoted link is not shown, click another tab; then click the span whose text is the quoted word."),
        _t("click-tab-2-medium", "tabs", H, _TABS,
           "Click each tab in turn until the quoted link shows up, then click the link."),
        _t("click-tab-2-hard", "tabs", H, _TABS,
           "Click each tab in turn until the exact quoted link shows up, then click it; or click no link if none."),
        _t("choose-date-easy", "dates", M, _DATEPICKER,
           "Order: click the datepicker box, click the a element whose text is the day, then click Submit."),
        _t("choose-date-medium", "dates", H, _DATEPICKER,
           "Order: click the datepicker box, click Prev or Next until the month shows, click the day, then Submit."),
        _t("email-inbox", "email", H, _EMAIL_ROWS,
           "Open the email from the named sender, then use the action the instruction asks for (reply, forward, "
           "star, delete)."),
        _t("email-inbox-delete", "email", H, _EMAIL_ROWS,
           "Click the span with class trash that follows the named sender's email-sender div."),
        _t("email-inbox-forward-nl", "email", H, "Emails are rows: a div with class email-sender; "
           "click the sender to open the email.",
           "Open the named sender's email, click Forward, type the recipient into the 'to' box, click Send."),
    )
}  # fmt: skip
