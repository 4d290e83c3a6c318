"""Readers of a worksheet's parts for ``compare_table``: charts, pivot tables, styles, rows/columns, data validation.

Each reader turns one openpyxl worksheet into a plain dict of the properties a rule names, so that a rule compares
the result's dict with the expected one's (OSWorld's ``desktop_env/evaluators/metrics/utils.py`` defines which
properties exist and how they are keyed; these are written from that description):

* :func:`chart_summary`: ``{"<values ref>,<categories ref>;...": {prop: value}}`` per chart, props among
  :data:`CHART_PROPS`.
* :func:`pivot_summary`: ``{"<source type>;<first cell>:<last cell>;<source sheet>": {prop: value}}`` per pivot
  table, props among :data:`PIVOT_PROPS`; field indices are counted from the first source column that a field uses.
* :func:`style_summary`: ``{coordinate: [prop values]}`` of every cell, props among :data:`~.cells.STYLE_PROPS`;
  a cell that a conditional format's expression makes active takes that format's style instead, as OSWorld
  evaluates it: the formula compiled by the ``formulas`` package and called with the cell's stored value, then the
  values of the formula's absolute references (``$A$1``, or a list for ``$A$1:$B$2``). Other conditional format
  types raise ``ValueError`` (OSWorld does not evaluate them either).
* :func:`dimension_summary`: ``{row or column key: {prop: value}}`` (:data:`ROW_PROPS`, :data:`COL_PROPS`).
* :func:`validations_hold`: every data validation of the sheet matches one of the rule's ``dv_props`` patterns.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from rlanything_core.envs.desktop.metrics.cells import match_value_to_rule, read_cell_style, read_cell_value

__all__ = [
    "CHART_PROPS",
    "COL_PROPS",
    "DV_ATTRIBUTES",
    "PIVOT_PROPS",
    "ROW_PROPS",
    "chart_summary",
    "dimension_summary",
    "pivot_summary",
    "style_summary",
    "validations_hold",
]

CHART_PROPS = ("title", "legend", "anchor", "width", "height", "type", "direction", "xtitle", "ytitle", "ztitle")
PIVOT_PROPS = (
    "name",
    "show_total",
    "show_empty_row",
    "show_empty_col",
    "show_headers",
    "location",
    "selection",
    "ordered",
    "filter",
    "col_fields",
    "row_fields",
    "data_fields",
    "data_fields_name",
)
ROW_PROPS = ("hidden", "collapsed", "height")
COL_PROPS = ("width", "auto_size", "hidden", "collapsed", "min", "max")
DV_ATTRIBUTES = (
    "ranges",
    "type",
    "formula1",
    "formula2",
    "operator",
    "allowBlank",
    "showDropDown",
    "showInputMessage",
    "showErrorMessage",
    "error",
    "errorTitle",
    "errorStyle",
    "prompt",
    "promptTitle",
    "imeMode",
)


# props read as one attribute each (prop -> the openpyxl attribute); the others are computed in the readers
_CHART_ATTRIBUTES = {"width": "width", "height": "height", "type": "tagname", "direction": "barDir"}
_PIVOT_ATTRIBUTES = {
    "name": "name",
    "show_total": "visualTotals",
    "show_empty_row": "showEmptyRow",
    "show_empty_col": "showEmptyCol",
    "show_headers": "showHeaders",
    "location": "location",
}


def _attributes(obj: Any, wanted: set[str], attributes: dict[str, str]) -> dict[str, Any]:
    """``{prop: obj.<attribute>}`` for the wanted props among ``attributes`` (a missing attribute reads None)."""
    return {prop: getattr(obj, attribute, None) for prop, attribute in attributes.items() if prop in wanted}


def _rich_text(title: Any) -> Any:
    """The first run of a chart or axis title's rich text, or None (no title, or a title given by reference)."""
    try:
        return title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def _ref(data: Any) -> str:
    for kind in ("numRef", "strRef"):
        ref = getattr(data, kind, None)
        if ref is not None and getattr(ref, "f", None) is not None:
            return str(ref.f)
    return ""


def chart_summary(sheet: Any, props: list[str]) -> dict[str, dict[str, Any]]:
    """The charts of an openpyxl worksheet (``None``: no sheet, an empty dict), keyed by their data references."""
    if sheet is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for chart in getattr(sheet, "_charts", []):
        key = ";".join(f"{_ref(s.val)},{_ref(s.cat)}" for s in chart.series)
        info: dict[str, Any] = {}
        wanted = set(props)
        if "title" in wanted:
            info["title"] = _rich_text(chart.title)
        if "legend" in wanted:
            info["legend"] = chart.legend.position if chart.legend is not None else None
        if "anchor" in wanted:
            anchor = chart.anchor
            start, end = getattr(anchor, "_from", None), getattr(anchor, "to", None)
            info["anchor"] = [
                getattr(anchor, "editAs", None),
                getattr(start, "col", None),
                getattr(start, "row", None),
                getattr(end, "col", None),
                getattr(end, "row", None),
            ]
        info |= _attributes(chart, wanted, _CHART_ATTRIBUTES)
        for axis in ("x", "y", "z"):
            if f"{axis}title" in wanted:
                info[f"{axis}title"] = _rich_text(getattr(getattr(chart, f"{axis}_axis", None), "title", None))
        out[key] = info
    return out


def pivot_summary(sheet: Any, props: list[str]) -> dict[str, dict[str, Any]]:
    """The pivot tables of an openpyxl worksheet, keyed by their source range (see the module docstring)."""
    from openpyxl.utils.cell import coordinate_to_tuple

    if sheet is None:
        return {}
    wanted = set(props)
    out: dict[str, dict[str, Any]] = {}
    for pivot in getattr(sheet, "_pivots", []):
        raw = [[(item.h, item.x) for item in field.items if item.x is not None] for field in pivot.pivotFields]
        # fields with no items at either end are source columns the table does not use: indices shift past them
        left = len(list(itertools.takewhile(lambda r: not r, raw)))
        used = raw[left:]
        right = len(list(itertools.takewhile(lambda r: not r, reversed(used))))
        selection = used[: len(used) - right]
        source = pivot.cache.cacheSource
        first, last = source.worksheetSource.ref.split(":")
        r1, c1 = coordinate_to_tuple(first)
        r2, c2 = coordinate_to_tuple(last)
        key = f"{source.type};{(r1, c1 + left)}:{(r2, c2 - right)};{source.worksheetSource.sheet}"
        info = _attributes(pivot, wanted, _PIVOT_ATTRIBUTES)
        if "filter" in wanted or "selection" in wanted:
            info["selection"] = selection if "ordered" in wanted else [set(r) for r in selection]
        if "filter" in wanted:
            info["filter_fields"] = {f.fld for f in pivot.pageFields}
        for prop, fields in (("col_fields", pivot.colFields), ("row_fields", pivot.rowFields)):
            if prop in wanted:
                info[prop] = [f.x - left for f in fields]
        if "data_fields" in wanted:
            named = "data_fields_name" in wanted
            info["data_fields"] = [
                f"{f.fld - left};{f.name if named else ''};{f.subtotal};{f.showDataAs}" for f in pivot.dataFields
            ]
        out[key] = info
    return out


_ABSOLUTE = re.compile(r"\$(?P<col1>[A-Z]{1,3})\$(?P<row1>\d+)(?::\$(?P<col2>[A-Z]{1,3})\$(?P<row2>\d+))?")


def _condition(formula: str) -> Any:
    import formulas

    return formulas.Parser().ast("=" + formula)[1].compile()


def style_summary(sheet: Any, props: list[str], *, book_path: str = "", sheet_name: str = "") -> dict[str, Any]:
    """Each cell's named style properties, conditional formats applied (module docstring).

    Args:
        sheet: the openpyxl worksheet (``None``: an empty summary).
        props: the properties, among :data:`~.cells.STYLE_PROPS`.
        book_path: the workbook's file, whose stored values the conditions read.
        sheet_name: the sheet's name in it.
    """
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.cell_range import CellRange

    if sheet is None:
        return {}
    out: dict[str, Any] = {}
    for column in sheet.iter_cols():
        for cell in column:
            out[cell.coordinate] = [read_cell_style(p, cell) for p in props]
    for fmt in sheet.conditional_formatting:
        for rule in fmt.rules:
            if rule.type != "expression" or not rule.formula:
                raise ValueError(f"conditional format type {rule.type!r} on {fmt.sqref} is not evaluated")
            condition = _condition(rule.formula[0])
            arguments: list[Any] = []
            for m in _ABSOLUTE.finditer(rule.formula[0]):
                if m["col2"] is None:
                    arguments.append(read_cell_value(book_path, sheet_name, f"{m['col1']}{m['row1']}"))
                else:
                    cells = CellRange(f"{m['col1']}{m['row1']}:{m['col2']}{m['row2']}").cells
                    arguments.append(
                        [read_cell_value(book_path, sheet_name, f"{get_column_letter(c)}{r}") for r, c in cells]
                    )
            for cell_range in fmt.cells:
                for row, col in cell_range.cells:
                    coordinate = f"{get_column_letter(col)}{row}"
                    if bool(condition(read_cell_value(book_path, sheet_name, coordinate), *arguments)):
                        cell = sheet.cell(row=row, column=col)
                        out[coordinate] = [read_cell_style(p, cell, rule.dxf) for p in props]
    return out


def dimension_summary(sheet: Any, obj: str, props: list[str]) -> dict[Any, dict[str, Any]]:
    """The row (``obj="row"``) or column (``"column"``) dimensions openpyxl holds, with the named properties."""
    if sheet is None:
        return {}
    dims = sheet.row_dimensions if obj == "row" else sheet.column_dimensions
    return {key: {p: getattr(dim, p) for p in props} for key, dim in dims.items()}


def validations_hold(sheet: Any, dv_props: list[dict[str, Any]]) -> bool:
    """Whether the sheet has at least ``len(dv_props)`` data validations and each matches one pattern.

    A pattern is ``{attribute: value rule}``; ``ranges`` is compared with the ``spreadsheet_range`` method.
    """
    if sheet is None:
        return False
    validations = list(sheet.data_validations.dataValidation)
    if len(validations) < len(dv_props):
        return False
    for validation in validations:
        if not any(
            all(match_value_to_rule(getattr(validation, attr), rule) for attr, rule in pattern.items())
            for pattern in dv_props
        ):
            return False
    return True
