"""Agent actions in OSWorld's two action spaces, parsed and checked in the host, executed in the sandbox.

``pyautogui``: a string of Python code calling pyautogui (checked to compile, never run here), or one of the control
words ``WAIT``, ``DONE``, ``FAIL``. ``computer_13``: a dict ``{"action_type": NAME, "parameters": {...}}`` with the 13
GUI actions of OSWorld (MOVE_TO, CLICK, ...) plus WAIT/DONE/FAIL; each becomes a list of pyautogui calls (name,
positional args, keyword args) so that the sandbox executes data, not code, for this space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Action", "ActionKind", "Call", "InvalidAction", "parse_action"]

Call = tuple[str, list[Any], dict[str, Any]]


class ActionKind(str, Enum):
    """What an action does."""

    CODE = "code"  # pyautogui code, run in the sandbox
    CALLS = "calls"  # computer_13 action, as pyautogui calls run in the sandbox
    WAIT = "WAIT"
    DONE = "DONE"
    FAIL = "FAIL"


class InvalidAction(ValueError):
    """Model output that is neither valid pyautogui code nor a known computer_13 action (counted, not fatal)."""


@dataclass(frozen=True)
class Action:
    """A checked action.

    Attributes:
        kind: see :class:`ActionKind`.
        code: the pyautogui code (``CODE``).
        calls: the pyautogui calls (``CALLS``).
        raw: the action as given (for the history).
    """

    kind: ActionKind
    code: str = ""
    calls: tuple[Call, ...] = field(default_factory=tuple)
    raw: Any = None


_BUTTONS = ("left", "right", "middle")
_CONTROL = {k.value: k for k in (ActionKind.WAIT, ActionKind.DONE, ActionKind.FAIL)}


def _num(params: dict[str, Any], key: str, name: str, *, required: bool) -> float | None:
    if key not in params or params[key] is None:
        if required:
            raise InvalidAction(f"{name} needs parameter {key!r}")
        return None
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidAction(f"{name}.{key} must be a number, got {value!r}")
    return value


def _str(params: dict[str, Any], key: str, name: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidAction(f"{name} needs a non-empty string {key!r}, got {value!r}")
    return value


def _button(params: dict[str, Any], name: str) -> str:
    button = params.get("button", "left")
    if button not in _BUTTONS:
        raise InvalidAction(f"{name}.button must be one of {_BUTTONS}, got {button!r}")
    return str(button)


def _xy(params: dict[str, Any], name: str, *, required: bool) -> dict[str, Any]:
    x = _num(params, "x", name, required=required)
    y = _num(params, "y", name, required=required)
    if (x is None) != (y is None):
        raise InvalidAction(f"{name} needs both x and y or neither")
    return {} if x is None else {"x": x, "y": y}


def _computer13_calls(name: str, params: dict[str, Any]) -> list[Call]:
    """The pyautogui calls of one computer_13 action (OSWorld's parameter names and defaults)."""
    if name == "MOVE_TO":
        return [("moveTo", [], _xy(params, name, required=True))]
    if name == "CLICK":
        kwargs = {"button": _button(params, name), **_xy(params, name, required=False)}
        clicks = _num(params, "num_clicks", name, required=False)
        if clicks is not None:
            if clicks not in (1, 2, 3):
                raise InvalidAction(f"CLICK.num_clicks must be 1, 2 or 3, got {clicks!r}")
            kwargs["clicks"] = int(clicks)
        return [("click", [], kwargs)]
    if name in ("MOUSE_DOWN", "MOUSE_UP"):
        return [("mouseDown" if name == "MOUSE_DOWN" else "mouseUp", [], {"button": _button(params, name)})]
    if name == "RIGHT_CLICK":
        return [("rightClick", [], _xy(params, name, required=False))]
    if name == "DOUBLE_CLICK":
        return [("doubleClick", [], _xy(params, name, required=False))]
    if name == "DRAG_TO":
        return [("dragTo", [], {**_xy(params, name, required=True), "button": "left", "duration": 0.2})]
    if name == "SCROLL":
        dx = _num(params, "dx", name, required=True)
        dy = _num(params, "dy", name, required=True)
        calls: list[Call] = []
        if dy:
            calls.append(("scroll", [int(dy)], {}))
        if dx:
            calls.append(("hscroll", [int(dx)], {}))
        return calls
    if name == "TYPING":
        text = params.get("text")
        if not isinstance(text, str):
            raise InvalidAction(f"TYPING needs a string 'text', got {text!r}")
        return [("write", [text], {"interval": 0.005})]
    if name in ("PRESS", "KEY_DOWN", "KEY_UP"):
        fn = {"PRESS": "press", "KEY_DOWN": "keyDown", "KEY_UP": "keyUp"}[name]
        return [(fn, [_str(params, "key", name)], {})]
    if name == "HOTKEY":
        keys = params.get("keys")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            raise InvalidAction(f"HOTKEY needs a non-empty list of key names 'keys', got {keys!r}")
        return [("hotkey", list(keys), {})]
    raise InvalidAction(f"unknown computer_13 action_type {name!r}")


def parse_action(raw: Any) -> Action:
    """Check one action (a pyautogui code string, a control word, or a computer_13 dict).

    Raises:
        InvalidAction: empty or non-compiling code, unknown action type, bad parameters.
    """
    if isinstance(raw, str):
        word = raw.strip()
        if word in _CONTROL:
            return Action(_CONTROL[word], raw=raw)
        if not word:
            raise InvalidAction("empty action")
        try:
            compile(raw, "<action>", "exec")
        except (SyntaxError, ValueError) as exc:
            raise InvalidAction(f"not valid Python: {exc}") from None
        return Action(ActionKind.CODE, code=raw, raw=raw)
    if isinstance(raw, dict):
        name = raw.get("action_type")
        if not isinstance(name, str):
            raise InvalidAction(f"a computer_13 action needs a string 'action_type', got {raw!r}")
        if name in _CONTROL:
            return Action(_CONTROL[name], raw=raw)
        params = raw.get("parameters", {}) or {}
        if not isinstance(params, dict):
            raise InvalidAction(f"{name}.parameters must be a dict, got {params!r}")
        return Action(ActionKind.CALLS, calls=tuple(_computer13_calls(name, params)), raw=raw)
    raise InvalidAction(f"an action is a code string or a computer_13 dict, got {type(raw).__name__}")
