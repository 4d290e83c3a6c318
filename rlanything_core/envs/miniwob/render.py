"""What a text policy sees of a page and what it can do there: pure functions over flattened DOM elements.

- ``flatten_dom``: MiniWoB++'s ``DOMElement`` tree -> the elements worth showing (leaves, and the clickable
  containers), as plain ``ElementView`` records;
- ``render_dom``: one compact line per element, ``[ref] tag "text" #id .class value=".." (focused)``;
- ``candidate_actions``: the action strings derived from the page: ``click [ref] ...`` per element,
  ``type "<field value>" into [ref] ...`` per text box and task field, ``press <Enter>`` where there is a text box,
  and ``DONE``;
- ``parse_action``: an action string -> ``ParsedAction`` (``None`` when it names no known action).

Action strings name elements by ``ref`` (stable within an episode); the env checks that the element still exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = [
    "ActionKind",
    "ElementView",
    "ParsedAction",
    "candidate_actions",
    "flatten_dom",
    "parse_action",
    "render_dom",
]

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


def candidate_actions(
    elements: Sequence[ElementView],
    fields: Iterable[tuple[str, str]],
    *,
    text_limit: int = 30,
    max_clicks: int = 60,
) -> list[str]:
    """The action strings a scoring policy chooses from, derived from the page.

    Args:
        elements: from :func:`flatten_dom`.
        fields: the task's ``(key, value)`` fields: each value may be typed into each text box.
        text_limit: characters of element text kept in a click action's label.
        max_clicks: click actions kept (in document order).

    Returns:
        ``click [ref] tag "text" #id`` per element, ``type "value" into [ref] ...`` per text box and distinct field
        value, ``press <Enter>`` when a text box exists, and ``DONE`` last. No duplicates.
    """
    values = list(dict.fromkeys(v for _, v in fields if str(v).strip()))
    clicks = [f"click {_label(e, text_limit)}" for e in elements][:max_clicks]
    boxes = [e for e in elements if e.is_text_box]
    types = [f'type "{v}" into {_label(e, text_limit)}' for e in boxes for v in values]
    keys = ["press <Enter>"] if boxes else []
    return list(dict.fromkeys([*clicks, *types, *keys, "DONE"]))


class ActionKind(str, Enum):
    """The kinds of action a GUI step can take."""

    CLICK = "click"
    TYPE = "type"
    PRESS = "press"
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


def parse_action(action: str) -> ParsedAction | None:
    """Parse ``click [12] ...``, ``type "x" into [7] ...``, ``press <Enter>``, ``DONE`` or ``FAIL``.

    Returns:
        The parsed action, or ``None`` when the string names none of them (an invalid action, counted by the env).
    """
    if m := _END.match(action):
        return ParsedAction(ActionKind(m.group(1).upper()))
    if m := _CLICK.match(action):
        return ParsedAction(ActionKind.CLICK, ref=int(m.group(1)))
    if m := _TYPE.match(action):
        return ParsedAction(ActionKind.TYPE, ref=int(m.group(2)), text=m.group(1))
    if m := _PRESS.match(action):
        return ParsedAction(ActionKind.PRESS, key=m.group(1))
    return None
