"""Cell-level readers and OSWorld's ``{"method", "ref"}`` value rules (written from OSWorld's documented semantics).

* :func:`read_cell_value` reads the stored value from the xlsx XML as OSWorld does: a number cell (no type or
  ``t="n"``) is a ``float``, a shared string (``t="s"``) and a formula string (``t="str"``) are ``str``, anything
  else (inline strings, booleans, errors) and a missing cell are ``None``.
* :func:`read_cell_style` reads one style property through openpyxl; like OSWorld, most properties are ``None`` for
  an empty cell, and ``number_format`` is ``None`` for a non-numeric cell.
* :func:`match_value_to_rule`: ``eq ne le lt ge gt`` (Python operators), ``re[.FLAG...]`` (``re.search`` on the
  value as a string), ``approx:T`` (``|float(value) - ref| <= T``), ``range.XY`` (X, Y in ``e``/``t``: ``ref[0] <=/<
  value <=/< ref[1]``), ``str_list_eq``/``str_set_eq`` (comma-separated value vs a list), ``spreadsheet_range``
  (the value, a cell range, holds every range of ``ref[0]`` and lies inside the ranges of ``ref[1]``).
"""

from __future__ import annotations

import functools
import operator
import posixpath
import re
import zipfile
from typing import Any
from xml.etree import ElementTree

__all__ = ["RULE_METHODS", "STYLE_PROPS", "check_rule", "match_value_to_rule", "read_cell_style", "read_cell_value"]

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PKG_NS = {"r": "http://schemas.openxmlformats.org/package/2006/relationships"}
RULE_METHODS = (
    "eq",
    "ne",
    "le",
    "lt",
    "ge",
    "gt",
    "re",
    "approx",
    "range",
    "str_list_eq",
    "str_set_eq",
    "spreadsheet_range",
)
STYLE_PROPS = (
    "number_format",
    "font_name",
    "font_family",
    "font_color",
    "font_bold",
    "font_italic",
    "font_underline",
    "font_size",
    "fill_type",
    "bgcolor",
    "fgcolor",
    "hyperlink",
)


def _sheet_xml_path(z: zipfile.ZipFile, sheet_name: str) -> str | None:
    book = ElementTree.fromstring(z.read("xl/workbook.xml"))
    rels = ElementTree.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "") for r in rels.findall("r:Relationship", _PKG_NS)}
    for sheet in book.findall("m:sheets/m:sheet", _NS):
        if sheet.get("name") == sheet_name:
            target = targets.get(sheet.get(_REL_NS), "")
            return target.lstrip("/") if target.startswith("/") else posixpath.normpath(f"xl/{target}")
    return None


def read_cell_value(xlsx_file: str, sheet_name: str, coordinate: str) -> Any:
    """The stored value of ``coordinate`` in ``sheet_name`` (see the module docstring for the types)."""
    try:
        with zipfile.ZipFile(xlsx_file) as z:
            shared: list[str] = []
            if "xl/sharedStrings.xml" in z.namelist():
                sst = ElementTree.fromstring(z.read("xl/sharedStrings.xml"))
                shared = ["".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t")) for si in sst.findall("m:si", _NS)]
            path = _sheet_xml_path(z, sheet_name)
            if path is None:
                return None
            sheet = ElementTree.fromstring(z.read(path))
    except (zipfile.BadZipFile, KeyError, OSError, ElementTree.ParseError):
        return None
    for cell in sheet.iterfind("m:sheetData/m:row/m:c", _NS):
        if cell.get("r") != coordinate:
            continue
        kind = cell.get("t", "n")
        value = cell.findtext("m:v", default=None, namespaces=_NS)
        try:
            if kind == "n":
                return float(value) if value is not None else None
            if kind == "s":
                return shared[int(value)] if value is not None else None
            if kind == "str":
                return value
        except (ValueError, IndexError):
            return None
        return None
    return None


def read_cell_style(prop: str, cell: Any, diff: Any = None) -> Any:
    """One style property of an openpyxl cell (names in :data:`STYLE_PROPS`).

    ``diff``: a conditional format's differential style that applies to the cell; its font, fill and number format
    stand in for the cell's own (a part it does not set reads ``None``).
    """
    empty = cell.value is None
    source = diff if diff is not None else cell
    if prop == "number_format":
        if empty or cell.data_type != "n":
            return None
        return cell.number_format if diff is None else getattr(diff.numFmt, "formatCode", None)
    if prop.startswith("font_"):
        font = getattr(source, "font", None)
        if empty or font is None:
            return None
        attr = {"font_name": "name", "font_family": "family", "font_bold": "bold", "font_italic": "italic"}.get(prop)
        if attr is not None:
            return getattr(font, attr)
        if prop == "font_color":
            return font.color.rgb if font.color is not None else None
        if prop == "font_underline":
            return font.underline
        if prop == "font_size":
            return font.size
    if prop == "fill_type":
        return getattr(getattr(source, "fill", None), "tagname", None)
    if prop == "hyperlink":
        return None if empty else (cell.hyperlink or "")
    if prop in ("bgcolor", "fgcolor"):
        color = getattr(getattr(source, "fill", None), "bgColor" if prop == "bgcolor" else "fgColor", None)
        return getattr(color, "rgb", None)
    raise ValueError(f"unsupported cell style property {prop!r} (supported: {STYLE_PROPS})")


def check_rule(rule: Any, where: str) -> None:
    """Raise ``ValueError`` when ``rule`` is not a ``{"method", "ref"}`` dict with a known method."""
    if not isinstance(rule, dict) or not isinstance(rule.get("method"), str) or "ref" not in rule:
        raise ValueError(f"{where}: a value rule is {{'method': str, 'ref': value}}, got {rule!r}")
    method = rule["method"]
    base = method.split(".")[0].split(":")[0]
    if base not in RULE_METHODS:
        raise ValueError(f"{where}: unsupported rule method {method!r}")
    if base == "spreadsheet_range" and not (isinstance(rule["ref"], list) and len(rule["ref"]) == 2):
        raise ValueError(f"{where}: spreadsheet_range needs ref [inner ranges, outer ranges], got {rule['ref']!r}")
    if base == "re":
        for flag in method.split(".")[1:]:
            if not isinstance(getattr(re, flag, None), re.RegexFlag):
                raise ValueError(f"{where}: unknown regex flag {flag!r}")


def match_value_to_rule(value: Any, rule: dict[str, Any]) -> bool:
    """Whether ``value`` satisfies ``rule`` (see the module docstring)."""
    method, ref = rule["method"], rule["ref"]
    if method.startswith("re"):
        flags = functools.reduce(operator.or_, (getattr(re, f) for f in method.split(".")[1:]), re.RegexFlag(0))
        return re.search(ref, str(value), flags) is not None
    if method in ("eq", "ne", "le", "lt", "ge", "gt"):
        try:
            return bool(getattr(operator, method)(value, ref))
        except TypeError:  # e.g. None < 3: no match rather than a crash
            return False
    if method.startswith("approx"):
        try:
            return abs(float(value) - float(ref)) <= float(method.split(":")[1])
        except (TypeError, ValueError):
            return False
    if method.startswith("range."):
        left = operator.le if method[6] == "e" else operator.lt
        right = operator.le if method[7] == "e" else operator.lt
        try:
            return bool(left(ref[0], value) and right(value, ref[1]))
        except TypeError:
            return False
    if method == "spreadsheet_range":
        return _range_within(ref[0], value) and _range_within(value, ref[1])
    if method in ("str_list_eq", "str_set_eq"):
        parts = str(value).strip("\"'").split(",")
        return parts == list(ref) if method == "str_list_eq" else set(parts) == set(ref)
    raise ValueError(f"unsupported rule method {method!r}")


def _range_within(inner: Any, outer: Any) -> bool:
    """Whether every range of ``inner`` lies inside one range of ``outer`` (cell-range strings or openpyxl ranges)."""
    from openpyxl.worksheet.cell_range import MultiCellRange

    try:
        outer_ranges = MultiCellRange(str(outer)).ranges
        return all(any(r.issubset(o) for o in outer_ranges) for r in MultiCellRange(str(inner)).ranges)
    except (ValueError, TypeError):
        return False
