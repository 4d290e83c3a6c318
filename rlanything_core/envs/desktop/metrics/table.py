"""Spreadsheet metrics with OSWorld's semantics: ``compare_table`` and ``compare_csv``.

Written from OSWorld's ``desktop_env/evaluators/metrics/table.py`` (Apache-2.0), not copied.

``compare_table(result, expected=None, rules=[...])`` scores 1.0 when every rule holds, in order, else 0.0; a result
that is missing or does not load scores 0.0. Sheets are named as in OSWorld: an int ``i`` or ``"RIi"`` (the i-th
result sheet), ``"RNname"`` (result sheet by name), ``"EIi"``/``"ENname"`` (expected). Supported rules:

==================  ==================================================================================================
``sheet_name``      the two workbooks have the same sheet names, in order
``sheet_data``      pandas ``read_excel`` of both sheets (first row = header), rounded to ``precision`` (4) decimals,
                    ``DataFrame.equals``: same shape, same dtypes, same values
``sheet_fuzzy``     per-cell string comparison over ``range`` lists with the ``exact_match``, ``includes`` and
                    ``included_by`` types and the normalisations ``normalization``, ``trim_leadings``,
                    ``trim_trailings``, ``ignore_chars``, ``ignore_case``; ``fuzzy_match``: the Indel ratio (rapidfuzz's
                    ``fuzz.ratio``, :func:`~.pdf.text_ratio`) at least ``threshold`` (85) percent
``freeze``          the same ``freeze_panes``
``zoom``            the result sheet's zoom (100 when unset) matches a value rule
``check_cell``      ``props``: ``{"value" or a style property: rule}`` on one ``coordinate``
``sheet_print``     the sheets as printed: the CSV export ``<workbook stem>-<sheet name>.csv`` beside each workbook
                    (a postconfig writes it), lines stripped, trailing empty lines dropped (``ignore_case``)
``chart``           the charts of both sheets, keyed by their data references, with ``chart_props``
``pivot_table``     the pivot tables of both sheets, keyed by their source range, with ``pivot_props``
``style``           every cell's style ``props``, conditional formats applied as OSWorld evaluates them
``row_props``       the row dimensions' ``props`` (``hidden``, ``collapsed``, ``height``); ``col_props`` likewise
``data_validation`` every data validation of the sheet matches one of ``dv_props`` (value rules per attribute)
==================  ==================================================================================================

OSWorld's ``sparkline`` and ``filter`` rules are refused at load (no published task of these domains uses them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.metrics.cells import (
    STYLE_PROPS,
    check_rule,
    match_value_to_rule,
    read_cell_style,
    read_cell_value,
)
from rlanything_core.envs.desktop.metrics.pdf import text_ratio
from rlanything_core.envs.desktop.metrics.workbook_parts import (
    CHART_PROPS,
    COL_PROPS,
    DV_ATTRIBUTES,
    PIVOT_PROPS,
    ROW_PROPS,
    chart_summary,
    dimension_summary,
    pivot_summary,
    style_summary,
    validations_hold,
)

__all__ = ["TABLE_RULES", "check_table_options", "compare_csv", "compare_table"]

TABLE_RULES = (
    "sheet_name",
    "sheet_data",
    "sheet_fuzzy",
    "freeze",
    "zoom",
    "check_cell",
    "sheet_print",
    "chart",
    "pivot_table",
    "style",
    "row_props",
    "col_props",
    "data_validation",
)
_PROP_LISTS = {
    "chart": ("chart_props", CHART_PROPS),
    "pivot_table": ("pivot_props", PIVOT_PROPS),
    "style": ("props", STYLE_PROPS),
    "row_props": ("props", ROW_PROPS),
    "col_props": ("props", COL_PROPS),
}
_FUZZY_TYPES = ("exact_match", "includes", "included_by", "fuzzy_match")


_ONE_SHEET, _TWO_SHEETS = ("sheet_idx",), ("sheet_idx0", "sheet_idx1")
_ONE_SHEET_RULES = ("zoom", "check_cell", "data_validation")


def _check_sheet_index(idx: Any, where: str) -> None:
    """A sheet index is an int or ``RI<n>``/``EI<n>``/``RN<name>``/``EN<name>`` (see the module docstring)."""
    if isinstance(idx, bool) or not isinstance(idx, (int, str)):
        raise ValueError(f"{where}: a sheet index is an int or a string like 'RI0' or 'ENSheet1', got {idx!r}")
    if isinstance(idx, str) and (idx[:2] not in ("RI", "RN", "EI", "EN") or (idx[1] == "I" and not idx[2:].isdigit())):
        raise ValueError(f"{where}: unrecognized sheet index {idx!r} (RI<n>, RN<name>, EI<n> or EN<name>)")


def check_table_options(options: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first rule (or rule part) outside the supported subset."""
    rules = options.get("rules")
    if not isinstance(rules, list):
        raise ValueError("compare_table needs options.rules, a list")
    for i, rule in enumerate(rules):
        where = f"compare_table rule {i}"
        kind = rule.get("type") if isinstance(rule, dict) else None
        if kind not in TABLE_RULES:
            raise ValueError(f"{where}: unsupported compare_table rule type {kind!r} (supported: {TABLE_RULES})")
        needed = () if kind == "sheet_name" else _ONE_SHEET if kind in _ONE_SHEET_RULES else _TWO_SHEETS
        missing = [k for k in needed if k not in rule]
        if missing:
            raise ValueError(f"{where}: {kind} needs {missing}")
        for key in needed:
            _check_sheet_index(rule[key], f"{where}.{key}")
        if kind == "sheet_fuzzy":
            for sub in rule.get("rules", []):
                if sub.get("type") not in _FUZZY_TYPES:
                    raise ValueError(f"{where}: unsupported sheet_fuzzy type {sub.get('type')!r}")
        if kind == "zoom":
            check_rule({"method": rule.get("method"), "ref": rule.get("ref")}, where)
        if kind in _PROP_LISTS:
            key, known = _PROP_LISTS[kind]
            props = rule.get(key, [])
            if not isinstance(props, list) or any(p not in known for p in props):
                raise ValueError(f"{where}: {kind} {key} must be a list of {known}, got {props!r}")
        if kind == "data_validation":
            patterns = rule.get("dv_props")
            if not isinstance(patterns, list) or not all(isinstance(p, dict) for p in patterns):
                raise ValueError(f"{where}: data_validation needs 'dv_props', a list of dicts")
            for pattern in patterns:
                for attr, value_rule in pattern.items():
                    if attr not in DV_ATTRIBUTES:
                        raise ValueError(f"{where}: unsupported data validation attribute {attr!r}")
                    check_rule(value_rule, f"{where}.{attr}")
        if kind == "check_cell":
            props = rule.get("props")
            if not isinstance(props, dict) or not isinstance(rule.get("coordinate"), str):
                raise ValueError(f"{where}: check_cell needs 'coordinate' and a 'props' dict")
            for prop, value_rule in props.items():
                if prop != "value" and prop not in STYLE_PROPS:
                    raise ValueError(f"{where}: unsupported check_cell property {prop!r}")
                check_rule(value_rule, f"{where}.{prop}")


def _sheet_index(idx: Any, names_r: list[str], names_e: list[str] | None) -> tuple[str, str]:
    """``(side, sheet name)`` with side ``"r"`` or ``"e"``; an unknown index gives the name ``""``."""
    if isinstance(idx, int):
        return "r", names_r[idx] if 0 <= idx < len(names_r) else ""
    if not isinstance(idx, str) or idx[:2] not in ("RI", "RN", "EI", "EN"):
        raise ValueError(f"unrecognized sheet index {idx!r}")
    side, how, rest = idx[0].lower(), idx[1], idx[2:]
    if how == "N":
        return side, rest
    names = names_r if side == "r" else (names_e or [])
    try:
        return side, names[int(rest)]
    except (ValueError, IndexError):
        return side, ""


def _normalise(value: str, rule: dict[str, Any]) -> str:
    for old, new in rule.get("normalization", []):
        value = value.replace(old, new)
    if "trim_leadings" in rule:
        value = value.lstrip(rule["trim_leadings"])
    if "trim_trailings" in rule:
        value = value.rstrip(rule["trim_trailings"])
    if "ignore_chars" in rule:
        value = "".join(ch for ch in value if ch not in set(rule["ignore_chars"]))
    return value.lower() if rule.get("ignore_case", False) else value


class _Workbooks:
    """The result (side ``"r"``) and, where given, the expected workbook (``"e"``), addressed by a rule's sheet index.

    Each is opened once with openpyxl (values, styles, panes, zoom) and once with pandas (sheet data).
    """

    def __init__(self, result: str) -> None:
        import openpyxl
        import pandas as pd

        self.files: dict[str, str | None] = {"r": result, "e": None}
        self.xl = {"r": openpyxl.load_workbook(result)}
        self.pdb = {"r": pd.ExcelFile(result)}
        self.names_r = list(self.pdb["r"].sheet_names)
        self.names_e: list[str] | None = None

    def add_expected(self, expected: str) -> None:
        import openpyxl
        import pandas as pd

        self.files["e"] = expected
        self.xl["e"] = openpyxl.load_workbook(expected)
        self.pdb["e"] = pd.ExcelFile(expected)
        self.names_e = list(self.pdb["e"].sheet_names)

    def index(self, idx: Any) -> tuple[str, str]:
        """``(side, sheet name)`` of a rule's sheet index (see :func:`_sheet_index`)."""
        return _sheet_index(idx, self.names_r, self.names_e)

    def path(self, side: str) -> str:
        return self.files[side] or ""

    def frame(self, idx: Any) -> Any:
        """The sheet as a pandas ``DataFrame``, or None when it does not read."""
        import pandas as pd

        side, name = self.index(idx)
        try:
            return pd.read_excel(self.pdb[side], name)
        except Exception:
            return None

    def sheet(self, idx: Any) -> Any:
        """The openpyxl worksheet, or None when there is no such sheet."""
        side, name = self.index(idx)
        return self.xl[side][name] if side in self.xl and name in self.xl[side].sheetnames else None

    def printed(self, idx: Any) -> list[str] | None:
        """The sheet as printed (its CSV export beside the workbook; see the module docstring), or None."""
        side, name = self.index(idx)
        if not self.files[side]:
            return None
        csv = Path(self.path(side)).with_suffix("").as_posix() + f"-{name}.csv"
        try:
            lines = Path(csv).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        stripped = [line.strip() for line in lines]
        while stripped and not stripped[-1]:
            stripped.pop()
        return stripped


def _fuzzy_holds(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """``sheet_fuzzy``: every cell of every sub-rule's ranges compares as the sub-rule says, after normalising."""
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.cell_range import MultiCellRange

    sides = [books.index(rule[k]) for k in ("sheet_idx0", "sheet_idx1")]
    ok = True
    for sub in rule["rules"]:
        for cell_range in MultiCellRange(sub["range"]):
            for row, col in cell_range.cells:
                coord = f"{get_column_letter(col)}{row}"
                one_s, two_s = (_normalise(str(read_cell_value(books.path(s), n, coord)), sub) for s, n in sides)
                if sub["type"] == "includes":
                    ok = ok and two_s in one_s
                elif sub["type"] == "included_by":
                    ok = ok and one_s in two_s
                elif sub["type"] == "fuzzy_match":
                    ok = ok and 100 * text_ratio(one_s, two_s) >= float(sub.get("threshold", 85.0))
                else:
                    ok = ok and one_s == two_s
    return ok


def _cell_holds(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """``check_cell``: the cell's value and style properties match their value rules."""
    one = books.sheet(rule["sheet_idx"])
    if one is None:
        return False
    side, name = books.index(rule["sheet_idx"])
    cell = one[rule["coordinate"]]
    ok = True
    for prop, value_rule in rule["props"].items():
        if prop == "value":
            value = read_cell_value(books.path(side), name, rule["coordinate"])
        else:
            value = read_cell_style(prop, cell)
        ok = ok and match_value_to_rule(value, value_rule)
    return ok


def _rule_holds(books: _Workbooks, rule: dict[str, Any]) -> bool:
    """Whether one rule of ``compare_table`` holds (a sheet the rule needs and cannot find: it does not)."""
    kind = rule["type"]
    if kind == "sheet_name":
        return books.names_r == books.names_e
    if kind == "sheet_data":
        one, two = books.frame(rule["sheet_idx0"]), books.frame(rule["sheet_idx1"])
        digits = int(rule.get("precision", 4))
        return one is not None and two is not None and bool(one.round(digits).equals(two.round(digits)))
    if kind == "sheet_fuzzy":
        return _fuzzy_holds(books, rule)
    if kind == "freeze":
        one, two = books.sheet(rule["sheet_idx0"]), books.sheet(rule["sheet_idx1"])
        return one is not None and two is not None and one.freeze_panes == two.freeze_panes
    if kind == "zoom":
        one = books.sheet(rule["sheet_idx"])
        return one is not None and bool(match_value_to_rule(one.sheet_view.zoomScale or 100.0, rule))
    if kind == "sheet_print":
        first, second = books.printed(rule["sheet_idx0"]), books.printed(rule["sheet_idx1"])
        if first is None or second is None:
            return False
        if rule.get("ignore_case", False):
            first, second = [line.lower() for line in first], [line.lower() for line in second]
        return first == second
    if kind == "data_validation":
        return validations_hold(books.sheet(rule["sheet_idx"]), rule["dv_props"])
    if kind in _PROP_LISTS:
        sheets = [books.sheet(rule["sheet_idx0"]), books.sheet(rule["sheet_idx1"])]
        props = list(rule.get(_PROP_LISTS[kind][0], []))
        summaries: list[Any]
        if kind == "chart":
            summaries = [chart_summary(sheet, props) for sheet in sheets]
        elif kind == "pivot_table":
            summaries = [pivot_summary(sheet, props) for sheet in sheets]
        elif kind == "style":
            summaries = []
            for sheet, key in zip(sheets, ("sheet_idx0", "sheet_idx1")):
                side, name = books.index(rule[key])
                summaries.append(style_summary(sheet, props, book_path=books.path(side), sheet_name=name))
        else:
            obj = "row" if kind == "row_props" else "column"
            summaries = [dimension_summary(sheet, obj, props) for sheet in sheets]
        return bool(summaries[0] == summaries[1])
    return _cell_holds(books, rule)  # check_cell


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """1.0 when every rule in ``options["rules"]`` holds (module docstring), else 0.0."""
    if result is None or not Path(result).is_file():
        return 0.0
    try:
        books = _Workbooks(result)
    except ImportError:  # a missing spreadsheet library is an error of the installation, not a wrong result
        raise
    except Exception:  # an unreadable result is a wrong result
        return 0.0
    if expected is not None:
        books.add_expected(expected)
    for rule in options["rules"]:
        if not _rule_holds(books, rule):
            return 0.0
    return 1.0


def compare_csv(result: str | None, expected: str | list[str], **options: Any) -> float:
    """1.0 when the result's lines equal those of ``expected`` (any of a list).

    ``strict=False`` strips each line; ``ignore_case`` lowers them.
    """
    if result is None or not Path(result).is_file():
        return 0.0

    def lines(path: str) -> list[str]:
        out = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        if not options.get("strict", True):
            out = [line.strip() for line in out]
        return [line.lower() for line in out] if options.get("ignore_case", False) else out

    got = lines(result)
    for candidate in [expected] if isinstance(expected, str) else expected:
        if Path(candidate).is_file() and lines(candidate) == got:
            return 1.0
    return 0.0
