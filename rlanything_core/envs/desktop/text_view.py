"""A text view of a spreadsheet for CPU-scale policies: the cell grid as text, and candidate actions derived from it.

The grid is read back with openpyxl (cached values of formulas, as LibreOffice saved them). Candidates are the
operations a Calc task of this set is made of (type a word from the instruction into the next free column, an
aggregate under a numeric column, a formula column from two numeric columns, sort, bold header, number formats,
delete a row, DONE, FAIL); each is a label for the policy plus the GUI actions that perform it, so any scorer of
text actions (the ``ActionSelector`` protocol) can drive the real application.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.calc_gui import SORT_ASCENDING, SORT_DESCENDING, goto, hotkey, type_cells

__all__ = ["Grid", "TextAction", "candidate_actions", "read_grid", "render_grid"]

Grid = dict[str, list[list[Any]]]
_STOP = {"In", "The", "Put", "Add", "Make", "Type", "Set", "Show", "Sort", "Correct", "Delete", "Rename", "Write"}


@dataclass(frozen=True)
class TextAction:
    """A candidate: what the policy reads (``label``) and the GUI actions that do it."""

    label: str
    gui_actions: tuple[Any, ...]


def read_grid(path: str | Path) -> Grid:
    """``{sheet name: rows}`` of the workbook's cached values (trailing empty cells and rows dropped)."""
    import openpyxl

    book = openpyxl.load_workbook(path, data_only=True)
    grid: Grid = {}
    for sheet in book.worksheets:
        rows = [list(r) for r in sheet.iter_rows(values_only=True)]
        for row in rows:
            while row and row[-1] is None:
                row.pop()
        while rows and not rows[-1]:
            rows.pop()
        grid[sheet.title] = rows
    return grid


def _letter(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return str(get_column_letter(index + 1))


def _cell_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def render_grid(grid: Grid, *, max_rows: int = 15, max_cols: int = 8) -> str:
    """The sheets as aligned text tables (row numbers and column letters), truncated to ``max_rows x max_cols``."""
    parts = []
    for name, rows in grid.items():
        width = min(max((len(r) for r in rows), default=0), max_cols)
        shown = rows[:max_rows]
        parts.append(f'Sheet "{name}" ({len(rows)} rows x {width} columns):')
        header = ["  "] + [_letter(c) for c in range(width)]
        table = [header] + [[str(i + 1)] + [_cell_text(r[c]) if c < len(r) else "" for c in range(width)]
                            for i, r in enumerate(shown)]
        widths = [max(len(line[c]) for line in table) for c in range(width + 1)]
        parts.extend(" | ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table)
        if len(rows) > max_rows:
            parts.append(f"... {len(rows) - max_rows} more rows")
    return "\n".join(parts)


def _words(instruction: str, present: set[str]) -> list[str]:
    """Capitalised words and two-word phrases of the instruction that are not in the sheet yet (max 6)."""
    tokens = re.findall(r"[A-Za-z][A-Za-z0-9]*", instruction)
    found: list[str] = []
    for i, tok in enumerate(tokens):
        if not tok[0].isupper() or tok in _STOP:
            continue
        for cand in ([f"{tok} {tokens[i + 1]}"] if i + 1 < len(tokens) and tokens[i + 1][0].islower() else []) + [tok]:
            if cand not in present and cand not in found and not re.fullmatch(r"[A-Z]+[0-9]+", cand):
                found.append(cand)
    return found[:6]


def candidate_actions(grid: Grid, instruction: str) -> list[TextAction]:
    """The candidates for the first sheet of ``grid`` (see the module docstring), ending with DONE and FAIL."""
    rows = next(iter(grid.values()), [])
    out: list[TextAction] = []
    if rows:
        width = max(len(r) for r in rows)
        last = len(rows)  # 1-based number of the last row
        free = _letter(width)
        present = {str(v) for r in rows for v in r if v is not None}
        for word in _words(instruction, present):
            out.append(TextAction(f"type '{word}' into {free}1", (goto(f"{free}1"), type_cells(word))))
        numeric = [
            c for c in range(width)
            if last > 1 and all(len(r) > c and isinstance(r[c], (int, float)) for r in rows[1:])
        ]
        for c in numeric:
            col = _letter(c)
            for fn in ("SUM", "AVERAGE", "MAX", "MIN"):
                formula = f"={fn}({col}2:{col}{last})"
                target = f"{col}{last + 1}"
                out.append(TextAction(f"put {formula} in {target}", (goto(target), type_cells(formula))))
        for i, a in enumerate(numeric):
            for b in numeric[i + 1 :]:
                for op in ("*", "+"):
                    cells = [f"={_letter(a)}{r}{op}{_letter(b)}{r}" for r in range(2, last + 1)]
                    label = f"fill {free}2:{free}{last} with ={_letter(a)}n{op}{_letter(b)}n"
                    out.append(TextAction(label, (goto(f"{free}2"), type_cells(*cells))))
        for c in range(width):
            col = _letter(c)
            for way, button in (("ascending", SORT_ASCENDING), ("descending", SORT_DESCENDING)):
                click = f"pyautogui.click{button}"
                out.append(TextAction(f"sort rows by column {col} {way}", (goto(f"{col}2"), click)))
        out.append(TextAction("make row 1 bold", (goto(f"A1:{_letter(width - 1)}1"), hotkey("ctrl", "b"))))
        for c in numeric:
            span = f"{_letter(c)}2:{_letter(c)}{last}"
            out.append(TextAction(f"format {span} as percent", (goto(span), hotkey("ctrl", "shift", "5"))))
            out.append(TextAction(f"format {span} as currency", (goto(span), hotkey("ctrl", "shift", "4"))))
        for r in range(2, last + 1):
            delete = "pyautogui.hotkey('shift', 'space'); pyautogui.hotkey('ctrl', '-')"
            out.append(TextAction(f"delete row {r}", (goto(f"A{r}"), delete)))
    out.append(TextAction("DONE", ("DONE",)))
    out.append(TextAction("FAIL", ("FAIL",)))
    unique: dict[str, TextAction] = {}
    for action in out:
        unique.setdefault(action.label, action)
    return list(unique.values())
