"""Move an xlsx file's inline strings into its shared string table, as LibreOffice and Excel write them.

openpyxl writes every string cell inline (``t="inlineStr"``), and OSWorld's cell reader (``read_cell_value`` in
:mod:`.metrics.cells`, after OSWorld's ``desktop_env/evaluators/metrics/utils.py``) reads only numbers, shared strings
and formula strings: a gold file authored with openpyxl reads ``None`` for every string and silently fails a
``check_cell`` value rule or a ``sheet_fuzzy`` comparison. :func:`share_strings` rewrites such a file in place
(atomically) so that it reads as an application-written file does.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree

__all__ = ["share_strings"]

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_SST_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
_SST_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"


def _text(cell: ElementTree.Element) -> str:
    return "".join(t.text or "" for t in cell.iter(f"{{{_MAIN}}}t"))


def share_strings(path: str | Path) -> int:
    """Rewrite ``path``'s inline string cells as shared strings; returns how many cells changed.

    Raises:
        ValueError: ``path`` is not an xlsx file, or it already has a shared string table and inline strings
            (a mix this function does not merge).
    """
    file = Path(path)
    try:
        with zipfile.ZipFile(file) as z:
            parts = {name: z.read(name) for name in z.namelist()}
    except (OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{file} is not an xlsx file: {exc}") from None
    if "xl/workbook.xml" not in parts:
        raise ValueError(f"{file} is not an xlsx file (no xl/workbook.xml)")
    ElementTree.register_namespace("", _MAIN)
    strings: list[str] = []
    index: dict[str, int] = {}
    changed = 0
    for name in sorted(n for n in parts if n.startswith("xl/worksheets/") and n.endswith(".xml")):
        root = ElementTree.fromstring(parts[name])
        touched = False
        for cell in root.iter(f"{{{_MAIN}}}c"):
            if cell.get("t") != "inlineStr":
                continue
            text = _text(cell)
            for child in list(cell):
                if child.tag == f"{{{_MAIN}}}is":
                    cell.remove(child)
            if text not in index:
                index[text] = len(strings)
                strings.append(text)
            cell.set("t", "s")
            ElementTree.SubElement(cell, f"{{{_MAIN}}}v").text = str(index[text])
            changed += 1
            touched = True
        if touched:
            parts[name] = ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8")
    if not changed:
        return 0
    if "xl/sharedStrings.xml" in parts:
        raise ValueError(f"{file} has both a shared string table and inline strings")
    sst = ElementTree.Element(f"{{{_MAIN}}}sst", {"count": str(changed), "uniqueCount": str(len(strings))})
    for text in strings:
        t = ElementTree.SubElement(ElementTree.SubElement(sst, f"{{{_MAIN}}}si"), f"{{{_MAIN}}}t")
        t.text = text
        if text != text.strip():
            t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    parts["xl/sharedStrings.xml"] = ElementTree.tostring(sst, xml_declaration=True, encoding="UTF-8")
    ElementTree.register_namespace("", _PKG_REL)
    rels = ElementTree.fromstring(parts["xl/_rels/workbook.xml.rels"])
    ids = {r.get("Id") for r in rels}
    new_id = next(f"rId{i}" for i in range(1, len(ids) + 2) if f"rId{i}" not in ids)
    ElementTree.SubElement(
        rels, f"{{{_PKG_REL}}}Relationship", {"Id": new_id, "Type": _SST_REL, "Target": "sharedStrings.xml"}
    )
    parts["xl/_rels/workbook.xml.rels"] = ElementTree.tostring(rels, xml_declaration=True, encoding="UTF-8")
    ElementTree.register_namespace("", _CT)
    types = ElementTree.fromstring(parts["[Content_Types].xml"])
    ElementTree.SubElement(types, f"{{{_CT}}}Override", {"PartName": "/xl/sharedStrings.xml", "ContentType": _SST_CT})
    parts["[Content_Types].xml"] = ElementTree.tostring(types, xml_declaration=True, encoding="UTF-8")
    fd, tmp = tempfile.mkstemp(dir=file.parent, suffix=".xlsx.tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in parts.items():
                z.writestr(name, data)
        os.replace(tmp, file)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return changed
