"""The shipped LibreOffice Calc tasks: data, instruction, hint, expected result, and two scripted solutions each.

``python -m rlanything_core.envs.desktop.task_authoring`` (re)writes ``tasks/``: ``<id>.json`` in OSWorld's format,
``files/<id>.xlsx`` (the start file) and ``files/<id>_gold.xlsx`` (the expected file, computed here in Python, never
by replaying a solution), ``solutions/<id>.good.py`` and ``solutions/<id>.wrong.py`` (ACTIONS.py files for
``run-task``), and ``variants/hints.json`` (one hint per task for the hint variants of :mod:`.variants`).

The solutions drive the GUI as an agent would (pyautogui code and computer_13 dicts) on the default 1280x800 screen:
the Name Box, the sort buttons and the sheet tabs are at fixed positions there (:mod:`.calc_gui`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.calc_gui import (
    FIRST_SHEET_TAB,
    INSERT_SHEET_AT_END,
    SHEET_MENU,
    SORT_ASCENDING,
    SORT_DESCENDING,
    goto,
    hotkey,
    type_cells,
    typing,
)

__all__ = ["TASKS", "TASKS_DIR", "CalcTask", "write_tasks"]

TASKS_DIR = Path(__file__).with_name("tasks")

SALES: list[list[Any]] = [
    ["Region", "Product", "Units", "Price"],
    ["North", "Apples", 12, 3],
    ["South", "Pears", 7, 4],
    ["East", "Apples", 20, 3],
    ["West", "Plums", 5, 6],
    ["North", "Pears", 9, 4],
    ["South", "Plums", 14, 6],
]
GRADES: list[list[Any]] = [["Student", "Math", "Science"], ["Cara", 71, 88], ["Ana", 93, 75], ["Fay", 64, 90]]
GRADES += [["Dev", 85, 62], ["Ben", 78, 81], ["Eli", 90, 70]]
SHARES: list[list[Any]] = [["Item", "Share"], ["Rent", 0.4], ["Food", 0.25], ["Travel", 0.2], ["Other", 0.15]]
PRICES: list[list[Any]] = [["Item", "Price"], ["Tea", 3.7], ["Cake", 4.2], ["Soup", 6.8], ["Bread", 2.1]]
PRICES += [["Juice", 5.6]]
STOCK: list[list[Any]] = [["Item", "Status", "Count"], ["Bolt", "Active", 40], ["Nut", "Active", 55]]
STOCK += [["Gear", "Discontinued", 0]]
STOCK += [["Screw", "Active", 70], ["Washer", "Active", 25]]


@dataclass(frozen=True)
class CalcTask:
    """One task of the set.

    Attributes:
        slug: the short name; the task id is ``calc-<NN>-<slug>``.
        level: difficulty 1 (one cell) .. 5 (several steps or sheets).
        instruction: what the agent is asked (no how-to).
        hint: a how-to sentence appended by the hint variant.
        start: the start sheet(s): ``{sheet name: rows}``.
        gold: the expected sheet(s) (``None`` for an infeasible task).
        good: the scripted solution (ends with DONE, or FAIL for an infeasible task).
        wrong: a plausible wrong solution.
        rules: ``compare_table`` rules (default: every sheet's data, and the sheet names).
        extra_metrics: more ``compare_table`` rule lists, combined with ``conj="and"``.
        infeasible: the task cannot be done; the right answer is FAIL.
    """

    slug: str
    level: int
    instruction: str
    hint: str
    start: dict[str, list[list[Any]]]
    gold: dict[str, list[list[Any]]] | None
    good: list[Any]
    wrong: list[Any]
    rules: list[dict[str, Any]] | None = None
    extra_metrics: list[list[dict[str, Any]]] = field(default_factory=list)
    infeasible: bool = False


def _with(rows: list[list[Any]], updates: dict[tuple[int, int], Any]) -> list[list[Any]]:
    """A copy of ``rows`` with ``{(row, col) 0-based: value}`` set (rows/columns grow as needed)."""
    out = [list(r) for r in rows]
    for (r, c), value in updates.items():
        while len(out) <= r:
            out.append([])
        while len(out[r]) <= c:
            out[r].append(None)
        out[r][c] = value
    return out


def _column(rows: list[list[Any]], col: int, header: str, fn: Callable[[list[Any]], Any]) -> list[list[Any]]:
    updates = {(0, col): header}
    updates.update({(i, col): fn(r) for i, r in enumerate(rows) if i > 0})
    return _with(rows, updates)


def _sorted(rows: list[list[Any]], key: int, *, reverse: bool) -> list[list[Any]]:
    return [rows[0]] + sorted(rows[1:], key=lambda r: r[key], reverse=reverse)


def _bold_rules(cells: list[str]) -> list[dict[str, Any]]:
    return [
        {"type": "check_cell", "sheet_idx": 0, "coordinate": c, "props": {"font_bold": {"method": "eq", "ref": True}}}
        for c in cells
    ]


def _format_rules(cells: list[str], pattern: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "check_cell",
            "sheet_idx": 0,
            "coordinate": c,
            "props": {"number_format": {"method": "re", "ref": pattern}},
        }
        for c in cells
    ]


# Dialogs (rename, insert sheet) can take seconds to open on a loaded machine: the scripted solutions wait 3 s.
_NEW_SHEET = [
    {"action_type": "CLICK", "parameters": {"x": SHEET_MENU[0], "y": SHEET_MENU[1]}},
    "time.sleep(0.5)",
    {"action_type": "CLICK", "parameters": {"x": INSERT_SHEET_AT_END[0], "y": INSERT_SHEET_AT_END[1]}},
    "time.sleep(3.0)",
    hotkey("ctrl", "a"),
    typing("Summary\n"),
    "time.sleep(0.5)",
]
_REGIONS = ["North", "South", "East", "West"]
_UNITS = {r: sum(row[2] for row in SALES[1:] if row[0] == r) for r in _REGIONS}
_COUNTS = {r: sum(1 for row in SALES[1:] if row[0] == r) for r in _REGIONS}
_TOTAL_UNITS = sum(row[2] for row in SALES[1:])

TASKS: list[CalcTask] = [
    CalcTask("header", 1, "In sales.xlsx, type the header Revenue into cell E1.",
             "Click the Name Box left of the formula bar, go to E1, type Revenue and press Enter.",
             {"Sheet1": SALES}, {"Sheet1": _with(SALES, {(0, 4): "Revenue"})},
             [goto("E1"), type_cells("Revenue"), "DONE"], [goto("E1"), type_cells("Revenu"), "DONE"]),
    CalcTask("fix-typo", 1, "In sales.xlsx, cell A2 holds a misspelled region. Correct it to North.",
             "Select A2, type North over the old text and press Enter.",
             {"Sheet1": _with(SALES, {(1, 0): "Nrth"})}, {"Sheet1": SALES},
             [goto("A2"), typing("North\n"), "DONE"], [goto("A2"), typing("Norht\n"), "DONE"]),
    CalcTask("fill-constant", 2, "In sales.xlsx, add a column Quarter in column E: header Quarter in E1 and the "
             "value Q1 in every data row (E2:E7).",
             "Go to E1 and type Quarter, then Q1 six times, pressing Enter after each.",
             {"Sheet1": SALES}, {"Sheet1": _column(SALES, 4, "Quarter", lambda r: "Q1")},
             [goto("E1"), type_cells("Quarter", *["Q1"] * 6), "DONE"],
             [goto("E1"), type_cells("Quarter", *["Q1"] * 5), "DONE"]),
    CalcTask("sum", 2, "In sales.xlsx, put the total number of Units (C2:C7) in cell C8.",
             "Type the formula =SUM(C2:C7) into C8.",
             {"Sheet1": SALES}, {"Sheet1": _with(SALES, {(7, 2): _TOTAL_UNITS})},
             [goto("C8"), type_cells("=SUM(C2:C7)"), "DONE"], [goto("C8"), type_cells("=SUM(C2:C6)"), "DONE"]),
    CalcTask("average", 2, "In sales.xlsx, put the average Price (D2:D7) in cell D8.",
             "Type the formula =AVERAGE(D2:D7) into D8.",
             {"Sheet1": SALES}, {"Sheet1": _with(SALES, {(7, 3): sum(r[3] for r in SALES[1:]) / 6})},
             [goto("D8"), type_cells("=AVERAGE(D2:D7)"), "DONE"], [goto("D8"), type_cells("=MEDIAN(D2:D7)"), "DONE"]),
    CalcTask("max", 2, "In sales.xlsx, write Max Units in G1 and the largest number of Units in G2.",
             "In G2 use =MAX(C2:C7).",
             {"Sheet1": SALES}, {"Sheet1": _with(SALES, {(0, 6): "Max Units", (1, 6): 20})},
             [goto("G1"), type_cells("Max Units", "=MAX(C2:C7)"), "DONE"],
             [goto("G1"), type_cells("Max Units", "=MIN(C2:C7)"), "DONE"]),
    CalcTask("revenue-column", 3, "In sales.xlsx, add a Revenue column in E (header in E1): Units times Price for "
             "each row.",
             "Type Revenue in E1, then =C2*D2 in E2 and the matching formula in E3 to E7.",
             {"Sheet1": SALES}, {"Sheet1": _column(SALES, 4, "Revenue", lambda r: r[2] * r[3])},
             [goto("E1"), type_cells("Revenue", *[f"=C{i}*D{i}" for i in range(2, 8)]), "DONE"],
             [goto("E1"), type_cells("Revenue", *[f"=C{i}+D{i}" for i in range(2, 8)]), "DONE"]),
    CalcTask("label-column", 3, "In sales.xlsx, add a column Label in E (header in E1) holding the Region and the "
             "Product separated by one space, e.g. North Apples.",
             'In E2 type =A2&" "&B2 and repeat for rows 3 to 7.',
             {"Sheet1": SALES}, {"Sheet1": _column(SALES, 4, "Label", lambda r: f"{r[0]} {r[1]}")},
             [goto("E1"), type_cells("Label", *[f'=A{i}&" "&B{i}' for i in range(2, 8)]), "DONE"],
             [goto("E1"), type_cells("Label", *[f"=A{i}&B{i}" for i in range(2, 8)]), "DONE"]),
    CalcTask("upper-column", 3, "In sales.xlsx, add a column PRODUCT in E (header PRODUCT in E1) with each product "
             "name in capital letters.",
             "Use =UPPER(B2) in E2 and the same formula for the rows below.",
             {"Sheet1": SALES}, {"Sheet1": _column(SALES, 4, "PRODUCT", lambda r: r[1].upper())},
             [goto("E1"), type_cells("PRODUCT", *[f"=UPPER(B{i})" for i in range(2, 8)]), "DONE"],
             [goto("E1"), type_cells("PRODUCT", *[f"=PROPER(B{i})" for i in range(2, 8)]), "DONE"]),
    CalcTask("round-prices", 3, "In prices.xlsx, add a column Rounded in C (header in C1) with each Price rounded "
             "to the nearest whole number.",
             "Use =ROUND(B2;0) in C2 and the same for the rows below.",
             {"Sheet1": PRICES}, {"Sheet1": _column(PRICES, 2, "Rounded", lambda r: round(r[1]))},
             [goto("C1"), type_cells("Rounded", *[f"=ROUND(B{i};0)" for i in range(2, 7)]), "DONE"],
             [goto("C1"), type_cells("Rounded", *[f"=INT(B{i})" for i in range(2, 7)]), "DONE"]),
    CalcTask("sort-units", 4, "In sales.xlsx, sort the data rows by Units from smallest to largest, keeping the "
             "header in row 1 and each row together.",
             "Click a cell in the Units column, then the Sort Ascending button of the toolbar.",
             {"Sheet1": SALES}, {"Sheet1": _sorted(SALES, 2, reverse=False)},
             [goto("C2"), f"pyautogui.click{SORT_ASCENDING}", "DONE"],
             [goto("C2"), f"pyautogui.click{SORT_DESCENDING}", "DONE"]),
    CalcTask("sort-names", 4, "In grades.xlsx, sort the students by name from Z to A, keeping each row together.",
             "Click a cell in the Student column, then the Sort Descending button of the toolbar.",
             {"Sheet1": GRADES}, {"Sheet1": _sorted(GRADES, 0, reverse=True)},
             [goto("A2"), {"action_type": "CLICK", "parameters": {"x": SORT_DESCENDING[0], "y": SORT_DESCENDING[1]}},
              "DONE"],
             [goto("A2"), {"action_type": "CLICK", "parameters": {"x": SORT_ASCENDING[0], "y": SORT_ASCENDING[1]}},
              "DONE"]),
    CalcTask("bold-header", 4, "In sales.xlsx, make the header row (A1:D1) bold without changing any value.",
             "Select A1:D1 with the Name Box and press Ctrl+B.",
             {"Sheet1": SALES}, {"Sheet1": SALES},
             [goto("A1:D1"), hotkey("ctrl", "b"), "DONE"], [goto("A1:D1"), hotkey("ctrl", "i"), "DONE"],
             extra_metrics=[_bold_rules(["A1", "B1", "C1", "D1"])]),
    CalcTask("percent-format", 4, "In shares.xlsx, show the Share values (B2:B5) as percentages.",
             "Select B2:B5 and press Ctrl+Shift+5.",
             {"Sheet1": SHARES}, {"Sheet1": SHARES},
             [goto("B2:B5"), hotkey("ctrl", "shift", "5"), "DONE"],
             [goto("B2:B5"), hotkey("ctrl", "shift", "4"), "DONE"],
             extra_metrics=[_format_rules(["B2", "B3", "B4", "B5"], "%")]),
    CalcTask("currency-format", 4, "In sales.xlsx, show the Price values (D2:D7) as US dollar amounts.",
             "Select D2:D7 and press Ctrl+Shift+4.",
             {"Sheet1": SALES}, {"Sheet1": SALES},
             [goto("D2:D7"), hotkey("ctrl", "shift", "4"), "DONE"],
             [goto("D2:D7"), hotkey("ctrl", "shift", "5"), "DONE"],
             extra_metrics=[_format_rules([f"D{i}" for i in range(2, 8)], r"\$")]),
    CalcTask("delete-row", 4, "In stock.xlsx, delete the row of the discontinued item so that no empty row is left.",
             "Select a cell of row 4, press Shift+Space to select the row, then Ctrl+- to delete it.",
             {"Sheet1": STOCK}, {"Sheet1": STOCK[:3] + STOCK[4:]},
             [goto("A4"), "pyautogui.hotkey('shift', 'space'); pyautogui.hotkey('ctrl', '-')", "DONE"],
             [goto("A4:C4"), "pyautogui.press('delete')", "DONE"]),
    CalcTask("append-row", 4, "In sales.xlsx, add a new record below the last row: region North, product Kiwis, "
             "11 units at price 5.",
             "Go to A8 and type the four values, pressing Tab between them.",
             {"Sheet1": SALES}, {"Sheet1": SALES + [["North", "Kiwis", 11, 5]]},
             [goto("A8"), typing("North\tKiwis\t11\t5\n"), "DONE"], [goto("A8"), typing("North\tKiwis\t11\n"), "DONE"]),
    CalcTask("countif", 5, "In sales.xlsx, write North orders in G1 and, in G2, how many rows have the region North.",
             'Use =COUNTIF(A2:A7;"North") in G2.',
             {"Sheet1": SALES}, {"Sheet1": _with(SALES, {(0, 6): "North orders", (1, 6): _COUNTS["North"]})},
             [goto("G1"), type_cells("North orders", '=COUNTIF(A2:A7;"North")'), "DONE"],
             [goto("G1"), type_cells("North orders", '=COUNTIF(A2:A7;"West")'), "DONE"]),
    CalcTask("region-summary", 5, "In sales.xlsx, build a summary in F1:G5: headers Region and Total Units in F1 and "
             "G1, the regions North, South, East, West in F2:F5, and each region's total Units beside it.",
             'Type the labels, then in G2 =SUMIF($A$2:$A$7;F2;$C$2:$C$7) and the same for G3:G5.',
             {"Sheet1": SALES},
             {"Sheet1": _with(SALES, {(0, 5): "Region", (0, 6): "Total Units",
                                      **{(i + 1, 5): r for i, r in enumerate(_REGIONS)},
                                      **{(i + 1, 6): _UNITS[r] for i, r in enumerate(_REGIONS)}})},
             [goto("F1"), type_cells("Region", *_REGIONS), goto("G1"),
              type_cells("Total Units", *[f"=SUMIF($A$2:$A$7;F{i};$C$2:$C$7)" for i in range(2, 6)]), "DONE"],
             [goto("F1"), type_cells("Region", *_REGIONS), goto("G1"),
              type_cells("Total Units", *[f"=COUNTIF($A$2:$A$7;F{i})" for i in range(2, 6)]), "DONE"]),
    CalcTask("rename-sheet", 4, "In sales.xlsx, rename the sheet Sheet1 to Sales.",
             "Double-click the sheet tab at the bottom, type Sales and press Enter.",
             {"Sheet1": SALES}, {"Sales": SALES},
             [f"pyautogui.doubleClick{FIRST_SHEET_TAB}; time.sleep(3.0)", "pyautogui.hotkey('ctrl', 'a')",
              typing("Sales\n"), "DONE"],
             [f"pyautogui.doubleClick{FIRST_SHEET_TAB}; time.sleep(3.0)", "pyautogui.hotkey('ctrl', 'a')",
              typing("Sale\n"), "DONE"]),
    CalcTask("summary-sheet", 5, "In sales.xlsx, add a sheet named Summary after Sheet1 with Metric and Value in "
             "A1:B1 and, in row 2, Total Units and the sum of Sheet1's Units.",
             "Use Sheet > Insert Sheet at End, name it Summary, and use =SUM($Sheet1.C2:C7).",
             {"Sheet1": SALES},
             {"Sheet1": SALES, "Summary": [["Metric", "Value"], ["Total Units", _TOTAL_UNITS]]},
             [*_NEW_SHEET, goto("A1"), typing("Metric\tValue\nTotal Units\t=SUM($Sheet1.C2:C7)\n"), "DONE"],
             [*_NEW_SHEET, goto("A1"), typing("Metric\tValue\nTotal Units\t=SUM($Sheet1.D2:D7)\n"), "DONE"]),
    CalcTask("assistant-infeasible", 3, "In sales.xlsx, ask LibreOffice Calc's built-in AI assistant to write a "
             "summary of the sales into cell A10.",
             "LibreOffice Calc has no built-in AI assistant: the task cannot be done, so answer FAIL.",
             {"Sheet1": SALES}, None, ["FAIL"], [goto("A10"), type_cells("Sales are fine"), "DONE"], infeasible=True),
]


def task_id(index: int, task: CalcTask) -> str:
    """``calc-NN-slug`` (1-based)."""
    return f"calc-{index + 1:02d}-{task.slug}"


def _same_book(path: Path, sheets: dict[str, list[list[Any]]]) -> bool:
    """Whether ``path`` already holds exactly these sheets and values (xlsx bytes carry a save time)."""
    import openpyxl

    if not path.is_file():
        return False
    book = openpyxl.load_workbook(path)
    if book.sheetnames != list(sheets):
        return False
    return all(_trimmed(book[n].values) == _trimmed(rows) for n, rows in sheets.items())


def _trimmed(rows: Any) -> list[list[Any]]:
    """Rows without trailing empty cells (a sheet pads every row to its widest)."""
    out = [list(r) for r in rows]
    for row in out:
        while row and row[-1] is None:
            row.pop()
    return out


def _workbook(path: Path, sheets: dict[str, list[list[Any]]]) -> None:
    import openpyxl

    if _same_book(path, sheets):
        return
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(path)


def _file_name(task: CalcTask) -> str:
    return task.instruction.split(",")[0].split()[-1]  # "In sales.xlsx, ..." -> "sales.xlsx"


def task_json(index: int, task: CalcTask) -> dict[str, Any]:
    """The OSWorld-format JSON object of one task."""
    tid = task_id(index, task)
    name = _file_name(task)
    vm_path = f"/home/user/{name}"
    window = f"{name} - LibreOffice Calc"
    save = "import pyautogui; import time; pyautogui.hotkey('ctrl', 's'); time.sleep(0.5)"
    evaluator: dict[str, Any]
    if task.infeasible:
        evaluator = {"func": "infeasible"}
    else:
        base_rules = task.rules or [{"type": "sheet_name"}] + [
            {"type": "sheet_data", "sheet_idx0": f"RI{i}", "sheet_idx1": f"EI{i}"} for i in range(len(task.gold or {}))
        ]
        rule_sets = [base_rules, *task.extra_metrics]
        result = {"type": "vm_file", "path": vm_path, "dest": name}
        expected = {"type": "local_file", "path": f"files/{tid}_gold.xlsx"}
        evaluator = {
            "postconfig": [
                {"type": "activate_window", "parameters": {"window_name": window, "strict": True}},
                {"type": "sleep", "parameters": {"seconds": 0.3}},
                {"type": "execute", "parameters": {"command": ["python", "-c", save]}},
                {"type": "sleep", "parameters": {"seconds": 0.3}},
            ],
        }
        if len(rule_sets) == 1:
            evaluator.update(func="compare_table", result=result, expected=expected, options={"rules": base_rules})
        else:
            evaluator.update(
                func=["compare_table"] * len(rule_sets),
                conj="and",
                result=[result] * len(rule_sets),
                expected=[expected] * len(rule_sets),
                options=[{"rules": rules} for rules in rule_sets],
            )
    return {
        "id": tid,
        "snapshot": "libreoffice_calc",
        "instruction": task.instruction,
        "source": "rlanything (written for this repository)",
        "config": [
            {"type": "download", "parameters": {"files": [{"url": f"files/{tid}.xlsx", "path": vm_path}]}},
            {"type": "open", "parameters": {"path": vm_path}},
        ],
        "trajectory": "trajectories/",
        "related_apps": ["libreoffice_calc"],
        "evaluator": evaluator,
        "difficulty": task.level,
    }


def write_tasks(out_dir: Path = TASKS_DIR) -> list[Path]:
    """Write every task's JSON, start/gold files, solutions and hints; returns the JSON paths."""
    (out_dir / "files").mkdir(parents=True, exist_ok=True)
    (out_dir / "solutions").mkdir(exist_ok=True)
    paths, hints = [], {}
    for i, task in enumerate(TASKS):
        tid = task_id(i, task)
        _workbook(out_dir / "files" / f"{tid}.xlsx", task.start)
        if task.gold is not None:
            _workbook(out_dir / "files" / f"{tid}_gold.xlsx", task.gold)
        for kind, actions in (("good", task.good), ("wrong", task.wrong)):
            body = ",\n".join(f"    {a!r}" for a in actions)
            header = f"# ruff: noqa: E501\n# {kind} solution of {tid} (generated by task_authoring.py)\n"
            (out_dir / "solutions" / f"{tid}.{kind}.py").write_text(f"{header}ACTIONS = [\n{body},\n]\n")
        path = out_dir / f"{tid}.json"
        path.write_text(json.dumps(task_json(i, task), indent=2) + "\n")
        paths.append(path)
        hints[tid] = task.hint
    (out_dir / "variants").mkdir(exist_ok=True)
    (out_dir / "variants" / "hints.json").write_text(json.dumps(hints, indent=2) + "\n")
    return paths


if __name__ == "__main__":
    for p in write_tasks():
        print(p)
