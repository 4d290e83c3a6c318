"""Stand-in ``.docx`` files for OSWorld's Writer tasks, authored from what each metric checks (python-docx).

For each metric: ``good`` options describe a document that satisfies it (the gold file is written from the same
options, separately), and ``wrongs`` the variants that break it. Input files are the first wrong variant.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _osworld_standins import Case, Writer, as_list, cache_inputs, gold_cache
from PIL import Image

TEXT = ["Water Facts", "H2O is water.", "It boils at 100 degrees.", "Keep this paragraph."]


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_doc(path: Path, spec: dict[str, Any]) -> None:
    """A document from ``spec`` (keys below; each optional)."""
    from docx import Document
    from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
    from docx.shared import Inches, Pt, RGBColor

    doc = Document()
    texts = spec.get("texts", TEXT)
    for i, text in enumerate(texts):
        paragraph = doc.add_paragraph()
        if i == 1 and spec.get("subscript") is not None:
            paragraph.add_run("H")
            run = paragraph.add_run("2")
            run.font.subscript = spec["subscript"]
            paragraph.add_run(text[2:])
        elif spec.get("tabs"):  # three words, a tab, a value: the layout check_tabstops counts words in
            paragraph.add_run(f"{spec.get('tab_words', 'Chapter Page Title')}\t{i + 1}")
            paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(4), spec["tabs"])
        else:
            run = paragraph.add_run(text)
            if spec.get("font"):
                run.font.name = spec["font"] if i else spec.get("first_font", spec["font"])
            if spec.get("italic_pt") and i == 2:
                run.italic = True
                run.font.size = Pt(spec["italic_pt"])
        if spec.get("spacing"):
            paragraph.paragraph_format.line_spacing = spec["spacing"]
        if i == 0 and spec.get("centered") is not None:
            paragraph.alignment = WD_PARAGRAPH_ALIGNMENT.CENTER if spec["centered"] else WD_PARAGRAPH_ALIGNMENT.LEFT
        if i == len(texts) - 1 and spec.get("strike") is not None:
            for run in paragraph.runs:
                run.font.strike = spec["strike"]
    if spec.get("page_break"):
        doc.paragraphs[1].runs[-1].add_break(WD_BREAK.PAGE)
    if "image" in spec:
        paragraph = doc.add_paragraph()
        if spec["image"]:
            paragraph.add_run().add_picture(io.BytesIO(_png()), width=Inches(1))
        else:
            paragraph.add_run("an image goes here")
    if "table" in spec:
        table = doc.add_table(rows=len(spec["table"]), cols=len(spec["table"][0]))
        for r, row in enumerate(spec["table"]):
            for c, value in enumerate(row):
                table.cell(r, c).text = value
    if "word_table" in spec:  # one word per cell, each run in its colour
        words = spec["word_table"]
        table = doc.add_table(rows=1, cols=len(words))
        for c, (word, rgb) in enumerate(words):
            run = table.cell(0, c).paragraphs[0].add_run(word)
            if rgb is not None:
                run.font.color.rgb = RGBColor(*rgb)
    if "footer" in spec:
        doc.sections[0].footer.paragraphs[0].text = spec["footer"]
    doc.save(path)
    _ = WD_TAB_ALIGNMENT  # the tab alignments come in through spec["tabs"]


def _tab(kind: str) -> Any:
    from docx.enum.text import WD_TAB_ALIGNMENT

    return getattr(WD_TAB_ALIGNMENT, kind)


TABLE = [["Task", "Hours"], ["Draft", "3"], ["Review", "1"]]
RED, BLUE = (255, 0, 0), (0, 0, 255)
WORDS = [("and", RED), ("big", BLUE), ("over", RED), ("the", BLUE)]


def write_odt(path: Path, spec: dict[str, Any]) -> None:
    """A minimal OpenDocument text: the paragraphs of ``spec["texts"]``, a span highlighted yellow if asked."""
    import zipfile

    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'
    )
    color = "#ffff00" if spec.get("highlight") else "transparent"
    paragraphs = "".join(
        f'<text:p>{t[:5]}<text:span text:style-name="T1">{t[5:]}</text:span></text:p>' for t in spec.get("texts", TEXT)
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} office:version="1.2">'
        '<office:automatic-styles><style:style style:name="T1" style:family="text">'
        f'<style:text-properties fo:background-color="{color}"/></style:style></office:automatic-styles>'
        f"<office:body><office:text>{paragraphs}</office:text></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>'
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        z.writestr("META-INF/manifest.xml", manifest)
        z.writestr("content.xml", content)


def writer_specs(func: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(good spec, {label: wrong spec})`` for one Writer metric."""
    changed = {"texts": [*TEXT[:2], "It boils at 90 degrees.", TEXT[3]]}
    table: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]]]] = {
        "compare_docx_files": ({}, {"text": changed}),
        "compare_docx_lines": ({}, {"line missing": {"texts": TEXT[:3]}}),
        "compare_line_spacing": ({"spacing": 2.0}, {"spacing": {"spacing": 1.0}, "text": {**changed, "spacing": 2.0}}),
        "check_tabstops": (
            {"tabs": _tab("RIGHT")},
            {"alignment": {"tabs": _tab("CENTER")}, "words before the tab": {"tabs": _tab("RIGHT"), "tab_words": "x"}},
        ),
        "compare_subscript_contains": ({"subscript": True}, {"no subscript": {"subscript": False}}),
        "has_page_numbers_in_footers": ({"footer": "Page 1"}, {"no number": {"footer": "Page"}}),
        "compare_font_names": (
            {"font": "Times New Roman"},
            {"one run in Arial": {"font": "Times New Roman", "first_font": "Arial"}},
        ),
        "is_first_line_centered": ({"centered": True}, {"left": {"centered": False}}),
        "compare_docx_tables": ({"table": TABLE}, {"cell": {"table": [*TABLE[:2], ["Review", "2"]]}}),
        "compare_contains_image": ({"image": True}, {"no image": {"image": False}}),
        "evaluate_strike_through_last_paragraph": ({"strike": True}, {"not struck": {"strike": False}}),
        "check_italic_font_size_14": ({"italic_pt": 14}, {"12 pt": {"italic_pt": 12}, "text": changed}),
        "contains_page_break": ({"page_break": True}, {"no break": {"page_break": False}}),
        "evaluate_colored_words_in_tables": (
            {"word_table": WORDS},
            {
                "a vowel word blue": {"word_table": [("and", BLUE), *WORDS[1:]]},
                "uncoloured": {"word_table": [("and", None), *WORDS[1:]]},
                "text": changed,
            },
        ),
        "check_highlighted_words": ({"highlight": False}, {"still highlighted": {"highlight": True}, "text": changed}),
    }
    return table[func]


def _doc_writer(spec: dict[str, Any]) -> Writer:
    return lambda path: write_odt(path, spec) if path.suffix == ".odt" else write_doc(path, spec)


def write_text_pdf(path: Path, lines: list[str]) -> None:
    """A one-page PDF showing ``lines`` in Helvetica (hand-written objects and cross-reference table)."""
    text = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {text} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))


def pdf_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """``compare_pdfs`` (graded text similarity): the exported PDF; another text only scores low."""
    result = as_list(raw["evaluator"]["result"])[0]["path"]

    def pdf(lines: list[str]) -> Writer:
        return lambda path: write_text_pdf(path, lines)

    other = ["0123 4567 89", "9876 5432 10"]
    case = Case(
        good={result: pdf(TEXT)},
        wrongs={"not exported": {}, "another text": {result: pdf(other)}},
        wrong_max={"another text": 0.3},
    )
    gold_cache(case, raw, cache_dir, pdf(TEXT))
    cache_inputs(case, raw, cache_dir, _doc_writer({}))
    return case


def writer_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """Stand-ins for one ``libreoffice_writer`` task (funcs combined with ``and``: every metric's spec merged)."""
    ev = raw["evaluator"]
    if ev["func"] == "compare_pdfs":
        return pdf_case(raw, cache_dir)
    funcs = as_list(ev["func"])
    options = as_list(ev.get("options", {}))
    good: dict[str, Any] = {}
    wrongs: dict[str, dict[str, Any]] = {}
    for func, opts in zip(funcs, options + [{}] * (len(funcs) - len(options))):
        spec, bad = writer_specs(func, opts or {})
        good.update(spec)
        wrongs.update({f"{func}:{label}": w for label, w in bad.items()})
    result = as_list(ev["result"])[0]["path"]
    case = Case(
        good={result: _doc_writer(good)},
        wrongs={label: {result: _doc_writer({**good, **w})} for label, w in wrongs.items()},
    )
    gold_cache(case, raw, cache_dir, _doc_writer(good))
    start: Callable[[Path], None] = _doc_writer({**good, **next(iter(wrongs.values()))})
    cache_inputs(case, raw, cache_dir, start)
    return case
