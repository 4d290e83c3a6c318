"""What a text policy sees of a page and what it can do there: pure functions over flattened DOM elements.

- ``flatten_dom``: MiniWoB++'s ``DOMElement`` tree -> the elements worth showing (leaves, and the clickable
  containers), as plain ``ElementView`` records;
- ``render_dom``: one compact line per element, ``[ref] tag "text" #id .class value=".." (focused)``;
- ``element_page``: a page with more elements than the candidate cap is shown a page of elements at a time, the
  elements that match the instruction first (:func:`rank_elements`); ``show more elements`` turns the page, so no
  element is ever cut silently;
- ``candidate_actions``: the action strings derived from the shown elements: ``click [ref] ...`` per element,
  ``type "<field value>" into [ref] ...`` per text box and task field, ``press <Enter>`` where there is a text box,
  ``show more elements`` when there are more, ``wait`` (where offered) and ``DONE``;
- ``parse_action``: an action string -> ``ParsedAction`` (``None`` when it names no known action);
- ``key_error`` / ``text_error``: why a key or a text cannot be sent to the browser (checked before sending, so a
  bad one is an invalid action, never a browser error).

Action strings name elements by ``ref`` (stable within an episode); the env checks that the element still exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = [
    "MAX_TYPE_CHARS",
    "MORE_ACTION",
    "WAIT_ACTION",
    "ActionKind",
    "ElementView",
    "ParsedAction",
    "candidate_actions",
    "element_page",
    "flatten_dom",
    "key_error",
    "parse_action",
    "rank_elements",
    "render_dom",
    "text_error",
]

MAX_TYPE_CHARS = 500
MORE_ACTION = "show more elements"
WAIT_ACTION = "wait"

# Containers shown although they have children (their own click does something); a table cell is not among them:
# a datepicker's 35 empty cells would push the day links past the candidate cap.
_CLICKABLE = frozenset({"button", "a", "label", "select", "option", "li", "span", "img", "h3"})
_NOT_TEXT_INPUTS = frozenset({"input_checkbox", "input_radio", "input_button", "input_submit", "input_range"})
_CONTAINERS = frozenset({"body", "html"})


@dataclass(frozen=True)
class ElementView:
    """One page element as the policy sees it.

    Attributes:
        ref: MiniWoB++'s element id within the episode.
        tag: lower-case tag; inputs carry their type (``input_text``, ``input_checkbox``).
        text: the element's own text ('' for none).
        value: an input's value (``True``/``False`` for checkboxes and radios), else ``None``.
        id: the HTML id ('' for none).
        classes: the HTML classes ('' for none).
        left, top, width, height: geometry in page pixels.
        focused: the element has the keyboard focus.
    """

    ref: int
    tag: str
    text: str = ""
    value: Any = None
    id: str = ""
    classes: str = ""
    left: float = 0.0
    top: float = 0.0
    width: float = 0.0
    height: float = 0.0
    focused: bool = False

    @property
    def is_text_box(self) -> bool:
        """A field one types into."""
        return self.tag == "textarea" or (self.tag.startswith("input_") and self.tag not in _NOT_TEXT_INPUTS)


def flatten_dom(root: Any) -> list[ElementView]:
    """The visible elements worth showing: every leaf, plus clickable containers (buttons, links, list items).

    Args:
        root: a ``miniwob.dom.DOMElement`` (or anything with its attributes and ``children``).

    Returns:
        Elements in document order (``ref`` ascending within a subtree).
    """
    out: list[ElementView] = []

    def visit(node: Any) -> None:
        children = list(node.children)
        visible = node.width > 0 and node.height > 0
        leaf = not children
        shown = leaf or node.tag in _CLICKABLE or node.tag.startswith("input")
        keep = visible and node.tag not in _CONTAINERS and shown
        if keep:
            out.append(
                ElementView(
                    ref=int(node.ref), tag=str(node.tag), text=(node.text or "").strip(), value=node.value,
                    id=str(node.id or ""), classes=str(node.classes or ""), left=float(node.left),
                    top=float(node.top), width=float(node.width), height=float(node.height),
                    focused=bool(node.focused),
                )
            )  # fmt: skip
        for child in children:
            visit(child)

    visit(root)
    return out


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label(e: ElementView, limit: int) -> str:
    """``[ref] tag "text" #id``: how both the page view and the actions name an element."""
    label = f"[{e.ref}] {e.tag}"
    if e.text:
        label += f' "{_short(e.text, limit)}"'
    if e.id:
        label += f" #{e.id}"
    return label


def render_dom(elements: Sequence[ElementView], *, text_limit: int = 40, max_elements: int = 80) -> str:
    """One line per element: ``[ref] tag "text" #id .classes value="..." (focused)``.

    Args:
        elements: from :func:`flatten_dom`.
        text_limit: characters of text kept per element.
        max_elements: lines kept (a final ``... N more`` line says what was cut).
    """
    lines = []
    for e in elements[:max_elements]:
        line = _label(e, text_limit)
        if e.classes:
            line += " ." + ".".join(e.classes.split()[:2])
        if isinstance(e.value, bool):
            line += " checked" if e.value else " unchecked"
        elif e.value not in (None, ""):
            line += f' value="{_short(str(e.value), text_limit)}"'
        if e.focused:
            line += " (focused)"
        lines.append(line)
    if len(elements) > max_elements:
        lines.append(f"... {len(elements) - max_elements} more elements")
    return "\n".join(lines)


_INTERACTIVE = frozenset({"button", "a", "select", "option", "textarea", "label", "li"})


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 or w.isdigit()}


def rank_elements(
    elements: Sequence[ElementView], instruction: str, fields: Iterable[tuple[str, str]] = ()
) -> list[ElementView]:
    """``elements`` ordered by how likely the instruction targets them (stable: ties keep document order).

    Score: +4 when the element's whole text is a field value or appears in the instruction as whole words (``b5``
    is not in ``"b57"``), +2 when a word of its text, id or classes is a word of the instruction or of a field
    value, +1 for an interactive element (inputs, buttons, links, options, labels, list items).
    """
    goal = instruction.lower()
    values = {str(v).strip().lower() for _, v in fields if str(v).strip()}
    goal_words = _words(instruction) | {w for v in values for w in _words(v)}

    def score(e: ElementView) -> int:
        text = " ".join(e.text.split()).lower()
        in_goal = re.search(rf"(?<![a-z0-9]){re.escape(text)}(?![a-z0-9])", goal) is not None
        whole = bool(text) and (text in values or in_goal)
        words = bool((_words(e.text) | _words(e.id) | _words(e.classes)) & goal_words)
        interactive = e.tag in _INTERACTIVE or e.tag.startswith("input")
        return 4 * whole + 2 * words + int(interactive)

    return sorted(elements, key=lambda e: -score(e))


def element_page(
    elements: Sequence[ElementView],
    *,
    instruction: str = "",
    fields: Iterable[tuple[str, str]] = (),
    page: int = 0,
    per_page: int = 60,
) -> tuple[list[ElementView], int]:
    """The elements shown on candidate page ``page`` and the number of pages.

    A page with at most ``per_page`` elements is one page, in document order. A larger one is ranked
    (:func:`rank_elements`) and cut into pages of ``per_page``; each page is shown in document order.

    Args:
        elements: from :func:`flatten_dom`.
        instruction: the task's instruction (ranks the elements it mentions first).
        fields: the task's fields (their values rank like the instruction's words).
        page: which page (taken modulo the number of pages).
        per_page: elements per page (the candidate cap).

    Raises:
        ValueError: ``per_page < 1``.
    """
    if per_page < 1:
        raise ValueError(f"per_page: expected >= 1, got {per_page}")
    if len(elements) <= per_page:
        return list(elements), 1
    pages = -(-len(elements) // per_page)
    start = (page % pages) * per_page
    shown = {e.ref for e in rank_elements(elements, instruction, fields)[start : start + per_page]}
    return [e for e in elements if e.ref in shown], pages


def candidate_actions(
    elements: Sequence[ElementView],
    fields: Iterable[tuple[str, str]],
    *,
    text_limit: int = 30,
    max_clicks: int = 60,
    more: bool = False,
    wait: bool = False,
) -> list[str]:
    """The action strings a scoring policy chooses from, derived from the shown elements.

    Args:
        elements: the shown elements (:func:`element_page` of :func:`flatten_dom`).
        fields: the task's ``(key, value)`` fields: each value may be typed into each text box.
        text_limit: characters of element text kept in a click action's label.
        max_clicks: the candidate cap on elements; more elements than that is an error (page them with
            :func:`element_page`: an element past the cap would silently be out of reach).
        more: the page has more elements than shown (adds ``show more elements``).
        wait: offer ``wait`` (re-observe after the page's own delays, e.g. an autocomplete list).

    Returns:
        ``click [ref] tag "text" #id`` per element, ``type "value" into [ref] ...`` per text box and distinct field
        value, ``press <Enter>`` when a text box exists, ``show more elements``, ``wait``, and ``DONE`` last.
        No duplicates.

    Raises:
        ValueError: more than ``max_clicks`` elements.
    """
    if len(elements) > max_clicks:
        raise ValueError(
            f"elements: {len(elements)} exceed the candidate cap max_clicks={max_clicks}; page them with element_page"
        )
    values = list(dict.fromkeys(v for _, v in fields if str(v).strip()))
    clicks = [f"click {_label(e, text_limit)}" for e in elements]
    boxes = [e for e in elements if e.is_text_box]
    types = [f'type "{v}" into {_label(e, text_limit)}' for e in boxes for v in values]
    keys = ["press <Enter>"] if boxes else []
    extra = [MORE_ACTION] * more + [WAIT_ACTION] * wait
    return list(dict.fromkeys([*clicks, *types, *keys, *extra, "DONE"]))


def key_error(key: str) -> str | None:
    """Why ``key`` is not a key MiniWoB++'s syntax can press, or ``None`` when it is.

    The syntax: optional modifiers ``C-``, ``S-``, ``A-``, ``M-``, then one printable ASCII character or a special
    key in angle brackets (``<Enter>``, ``<ArrowRight>``; the list is ``miniwob.constants.WEBDRIVER_SPECIAL_KEYS``).
    """
    from miniwob.constants import WEBDRIVER_MODIFIER_KEYS, WEBDRIVER_SPECIAL_KEYS

    raw = key
    while raw[:2] in WEBDRIVER_MODIFIER_KEYS and len(raw) > 2:
        raw = raw[2:]
    if raw in WEBDRIVER_SPECIAL_KEYS or (len(raw) == 1 and " " <= raw <= "~"):
        return None
    close = [k for k in WEBDRIVER_SPECIAL_KEYS if k.strip("<>").lower() == raw.strip("<>").lower()]
    hint = f"; did you mean {close[0]}?" if close else "; keys are one character or <Name>, e.g. <Enter>, <ArrowRight>"
    return f"unknown key {key[:40]!r}{hint}"


def text_error(text: str, *, max_chars: int = MAX_TYPE_CHARS) -> str | None:
    """Why ``text`` is not typed, else ``None``.

    ChromeDriver types only characters of Unicode's basic plane, and a text longer than ``max_chars`` (one key
    event each) would hold the browser past its script timeout: both are invalid actions.
    """
    if len(text) > max_chars:
        return f"text is {len(text)} characters long; at most {max_chars} are typed in one action"
    bad = [c for c in text if ord(c) > 0xFFFF]
    if bad:
        return f"text has characters the browser cannot type (outside the basic plane): {''.join(bad[:5])!r}"
    return None


class ActionKind(str, Enum):
    """The kinds of action a GUI step can take."""

    CLICK = "click"
    TYPE = "type"
    PRESS = "press"
    WAIT = "wait"
    MORE = "more"
    DONE = "DONE"
    FAIL = "FAIL"


@dataclass(frozen=True)
class ParsedAction:
    """An action string, parsed.

    Attributes:
        kind: what to do.
        ref: the element (click, type), else ``None``.
        text: the text to type, else ``None``.
        key: the key to press, else ``None``.
    """

    kind: ActionKind
    ref: int | None = None
    text: str | None = None
    key: str | None = None


_CLICK = re.compile(r"^\s*click\s*\[(-?\d+)\]", re.IGNORECASE)
_TYPE = re.compile(r'^\s*type\s+"(.*)"\s+into\s*\[(-?\d+)\]', re.IGNORECASE | re.DOTALL)
_PRESS = re.compile(r"^\s*press\s+(\S+)\s*$", re.IGNORECASE)
_END = re.compile(r"^\s*(DONE|FAIL)\s*\.?\s*$", re.IGNORECASE)
_WAIT = re.compile(r"^\s*wait\s*\.?\s*$", re.IGNORECASE)
_MORE = re.compile(r"^\s*show\s+more\s+elements\s*\.?\s*$", re.IGNORECASE)


def parse_action(action: str) -> ParsedAction | None:
    """Parse an action string.

    The actions: ``click [12] ...``, ``type "x" into [7] ...``, ``press <Enter>``, ``wait``, ``show more elements``,
    ``DONE`` and ``FAIL``.

    Returns:
        The parsed action, or ``None`` when the string names none of them (an invalid action, counted by the env).
    """
    if m := _END.match(action):
        return ParsedAction(ActionKind(m.group(1).upper()))
    if _WAIT.match(action):
        return ParsedAction(ActionKind.WAIT)
    if _MORE.match(action):
        return ParsedAction(ActionKind.MORE)
    if m := _CLICK.match(action):
        return ParsedAction(ActionKind.CLICK, ref=int(m.group(1)))
    if m := _TYPE.match(action):
        return ParsedAction(ActionKind.TYPE, ref=int(m.group(2)), text=m.group(1))
    if m := _PRESS.match(action):
        return ParsedAction(ActionKind.PRESS, key=m.group(1))
    return None
