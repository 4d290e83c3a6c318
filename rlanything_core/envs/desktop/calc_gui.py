"""Where things are in LibreOffice Calc on the default 1280x800 screen, and GUI actions built from them.

The scripted solutions and the text view's candidate actions drive Calc as an agent would: through the Name Box
(type a cell or range, Enter), the toolbar's sort buttons, the Sheet menu and the keyboard. The positions hold for
the window as :class:`~rlanything_core.envs.desktop.office.OfficeApp` places it (full screen under openbox).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "INSERT_SHEET_AT_END",
    "NAME_BOX",
    "SHEET_MENU",
    "SORT_ASCENDING",
    "SORT_DESCENDING",
    "FIRST_SHEET_TAB",
    "goto",
    "hotkey",
    "type_cells",
    "typing",
]

NAME_BOX = (65, 107)
SORT_ASCENDING = (572, 51)
SORT_DESCENDING = (596, 51)
FIRST_SHEET_TAB = (150, 767)
SHEET_MENU = (265, 28)
INSERT_SHEET_AT_END = (335, 229)


def goto(ref: str) -> str:
    """Pyautogui code selecting ``ref`` (a cell or range) through the Name Box."""
    return f"pyautogui.click({NAME_BOX[0]}, {NAME_BOX[1]}); pyautogui.write({ref + chr(10)!r})"


def type_cells(*values: str) -> str:
    """Pyautogui code typing each value followed by Enter (the cursor moves down)."""
    return f"pyautogui.write({''.join(v + chr(10) for v in values)!r}, interval=0.01)"


def typing(text: str) -> dict[str, Any]:
    """A computer_13 TYPING action."""
    return {"action_type": "TYPING", "parameters": {"text": text}}


def hotkey(*keys: str) -> dict[str, Any]:
    """A computer_13 HOTKEY action."""
    return {"action_type": "HOTKEY", "parameters": {"keys": list(keys)}}
