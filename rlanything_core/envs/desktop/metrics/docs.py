"""OSWorld's LibreOffice Writer metrics on ``.docx`` files (python-docx), written from their semantics.

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/docs.py`` (Apache-2.0); the code here is ours.
Every metric scores 0 for a missing or unreadable file. Two-file metrics take ``(result, expected)``.

=========================================  ==========================================================================
``compare_docx_files``                     (``.docx`` or ``.odt`` pairs) paragraph texts equal: with ``ignore_blanks``
                                           (default) the texts joined
                                           with runs of white space made one space; else paragraph by paragraph;
                                           ``ignore_case``, ``ignore_order`` (sorted paragraphs)
``compare_docx_lines``                     the sets of non-empty stripped paragraph texts are equal
``compare_docx_tables``                    same number of tables, shapes, and stripped cell texts
``compare_line_spacing``                   ``compare_docx_files`` and, paragraph by paragraph, equal line spacing
``compare_subscript_contains``             some pair of aligned runs is subscript in both files
``compare_contains_image``                 aligned runs agree on holding a drawing
``evaluate_strike_through_last_paragraph`` ``compare_docx_files`` and every run of the result's last paragraph struck
``check_italic_font_size_14``              ``compare_docx_files`` and every italic run of the result is 14 pt
``check_tabstops``                         the non-empty paragraphs' tab stops: 1 minus the mean position shift
                                           (as a fraction of the text width); alignment or count differences score
                                           0; ``word_number_split_by_tabstop``/``index`` check the words before a tab
``has_page_numbers_in_footers``            every section's first footer paragraph holds a digit
``is_first_line_centered``                 the first paragraph is centred
``contains_page_break``                    some run holds a page break
``compare_font_names``                     (``rules = {"font_name"}``) every run uses that font
``evaluate_colored_words_in_tables``       ``compare_docx_files`` and, in the result's tables, every run starting
                                           with a vowel is red and every other run blue (CIEDE2000 within
                                           ``threshold``, 3.5); a run without an explicit colour fails
=========================================  ==========================================================================
"""

from __future__ import annotations

import re
from typing import Any

from rlanything_core.envs.desktop.metrics._files import read_or_none
from rlanything_core.envs.desktop.metrics.odt import has_yellow_highlight, odt_paragraphs

__all__ = [
    "check_highlighted_words",
    "check_italic_font_size_14",
    "check_tabstops",
    "compare_contains_image",
    "compare_docx_files",
    "compare_docx_lines",
    "compare_docx_tables",
    "compare_font_names",
    "compare_line_spacing",
    "compare_subscript_contains",
    "contains_page_break",
    "evaluate_colored_words_in_tables",
    "evaluate_strike_through_last_paragraph",
    "has_page_numbers_in_footers",
    "is_first_line_centered",
]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _open(path: Any) -> Any:
    """The python-docx document at ``path``, or None (no path, not a file, not a .docx)."""
    from docx import Document

    return read_or_none(path, Document)


def _open_both(result: Any, expected: Any) -> tuple[Any, Any] | None:
    one, two = _open(result), _open(expected)
    return None if one is None or two is None else (one, two)


def _paragraph_texts(path: Any) -> list[str] | None:
    """The paragraph texts of a ``.docx`` (python-docx) or ``.odt`` (:func:`.odt.odt_paragraphs`) file, or None."""
    if str(path).endswith(".odt"):
        return odt_paragraphs(path)
    doc = _open(path)
    return None if doc is None else [p.text for p in doc.paragraphs]


def _texts_equal(
    first: list[str], second: list[str], *, ignore_blanks: bool, ignore_case: bool, ignore_order: bool
) -> bool:
    if ignore_order:
        first, second = sorted(first), sorted(second)
    if ignore_blanks:
        a = re.sub(r"\s+", " ", "\n".join(first)).strip()
        b = re.sub(r"\s+", " ", "\n".join(second)).strip()
        return a.lower() == b.lower() if ignore_case else a == b
    if len(first) != len(second):
        return False
    if ignore_case:
        first, second = [p.lower() for p in first], [p.lower() for p in second]
    return first == second


def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the paragraph texts agree (module docstring; ``content_only`` is refused at load).

    Both files are ``.docx`` or both ``.odt``; any other pair scores 0.
    """
    if not result or not expected or str(result).endswith(".odt") != str(expected).endswith(".odt"):
        return 0.0
    first, second = _paragraph_texts(result), _paragraph_texts(expected)
    if first is None or second is None:
        return 0.0
    return float(
        _texts_equal(
            first,
            second,
            ignore_blanks=bool(options.get("ignore_blanks", True)),
            ignore_case=bool(options.get("ignore_case", False)),
            ignore_order=bool(options.get("ignore_order", False)),
        )
    )


def check_highlighted_words(result: Any, expected: Any) -> float:
    """1.0 when the ``.odt`` texts agree and nothing in the result is highlighted yellow (the task: remove it)."""
    if has_yellow_highlight(result) is not False or not compare_docx_files(result, expected):
        return 0.0
    return 1.0


def compare_docx_lines(result: Any, expected: Any) -> float:
    """1.0 when both hold the same set of non-empty paragraph texts (stripped)."""
    docs = _open_both(result, expected)
    if docs is None:
        return 0.0
    one, two = ({p.text.strip() for p in d.paragraphs if p.text.strip()} for d in docs)
    return float(one == two)


def compare_docx_tables(result: Any, expected: Any) -> float:
    """1.0 when the tables agree in number, shape and stripped cell texts."""
    docs = _open_both(result, expected)
    if docs is None:
        return 0.0
    tables_one, tables_two = docs[0].tables, docs[1].tables
    if len(tables_one) != len(tables_two):
        return 0.0
    for t1, t2 in zip(tables_one, tables_two):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
        for i in range(len(t1.rows)):
            for j in range(len(t1.columns)):
                if t1.cell(i, j).text.strip() != t2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


def compare_line_spacing(result: Any, expected: Any) -> float:
    """1.0 when the texts agree and each paragraph has the expected line spacing."""
    docs = _open_both(result, expected)
    if docs is None or not compare_docx_files(result, expected):
        return 0.0
    one, two = docs
    if len(one.paragraphs) != len(two.paragraphs):
        return 0.0
    return float(
        all(
            p1.paragraph_format.line_spacing == p2.paragraph_format.line_spacing
            for p1, p2 in zip(one.paragraphs, two.paragraphs)
        )
    )


def _aligned_runs(one: Any, two: Any) -> Any:
    for p1, p2 in zip(one.paragraphs, two.paragraphs):
        yield from zip(p1.runs, p2.runs)


def compare_subscript_contains(result: Any, expected: Any) -> float:
    """1.0 when some pair of aligned runs (same paragraph, same run index) is subscript in both."""
    docs = _open_both(result, expected)
    if docs is None:
        return 0.0
    return float(any(r1.font.subscript and r2.font.subscript for r1, r2 in _aligned_runs(*docs)))


def _has_drawing(run: Any) -> bool:
    return "graphicData" in run._element.xml


def compare_contains_image(result: Any, expected: Any) -> float:
    """1.0 when no pair of aligned runs disagrees on holding a drawing."""
    docs = _open_both(result, expected)
    if docs is None:
        return 0.0
    return float(all(_has_drawing(r1) == _has_drawing(r2) for r1, r2 in _aligned_runs(*docs)))


def evaluate_strike_through_last_paragraph(result: Any, expected: Any) -> float:
    """1.0 when the texts agree and every run of the result's last paragraph is struck through."""
    docs = _open_both(result, expected)
    if docs is None or not compare_docx_files(result, expected) or not docs[0].paragraphs:
        return 0.0
    return float(all(run.font.strike for run in docs[0].paragraphs[-1].runs))


def check_italic_font_size_14(result: Any, expected: Any) -> float:
    """1.0 when the texts agree and every italic run of the result is 14 pt."""
    docs = _open_both(result, expected)
    if docs is None or not compare_docx_files(result, expected):
        return 0.0
    for paragraph in docs[0].paragraphs:
        for run in paragraph.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


def check_tabstops(result: Any, expected: Any, **options: Any) -> float:
    """Tab stops of the non-empty paragraphs compared (module docstring); a score in ``[0, 1]``."""
    from docx.enum.text import WD_TAB_ALIGNMENT

    docs = _open_both(result, expected)
    if docs is None:
        return 0.0
    one, two = ([p for p in d.paragraphs if p.text.strip()] for d in docs)
    if len(one) != len(two) or not one:
        return 0.0
    words = options.get("word_number_split_by_tabstop")
    if words is not None:
        index = int(options.get("index", 0))
        for paragraph in one:
            parts = paragraph.text.split("\t")
            if index >= len(parts) or len(parts[index].split()) != int(words):
                return 0.0

    def kept(stop: Any) -> bool:  # a cleared stop, or the default left stop at 0, is no stop
        return not (
            stop.alignment == WD_TAB_ALIGNMENT.CLEAR or (stop.alignment == WD_TAB_ALIGNMENT.LEFT and stop.position == 0)
        )

    section = docs[1].sections[0]
    width = section.page_width - section.left_margin - section.right_margin
    shift = 0.0
    for p1, p2 in zip(one, two):
        tabs1 = [t for t in p1.paragraph_format.tab_stops if kept(t)]
        tabs2 = [t for t in p2.paragraph_format.tab_stops if kept(t)]
        if len(tabs1) != len(tabs2) or any(t1.alignment != t2.alignment for t1, t2 in zip(tabs1, tabs2)):
            return 0.0
        shift += sum(abs(t1.position - t2.position) for t1, t2 in zip(tabs1, tabs2)) / width
    return max(0.0, 1.0 - shift / len(one))


def has_page_numbers_in_footers(result: Any) -> float:
    """1.0 when every section's first footer paragraph holds a digit."""
    doc = _open(result)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        if not any(ch.isdigit() for ch in (paragraphs[0].text if paragraphs else "")):
            return 0.0
    return 1.0


def is_first_line_centered(result: Any) -> float:
    """1.0 when the first paragraph is centred."""
    from docx.enum.text import WD_PARAGRAPH_ALIGNMENT

    doc = _open(result)
    if doc is None or not doc.paragraphs:
        return 0.0
    return float(doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


def contains_page_break(result: Any) -> float:
    """1.0 when some run of a body paragraph holds a page break."""
    doc = _open(result)
    if doc is None:
        return 0.0
    for paragraph in doc.paragraphs:
        for run in paragraph.runs:
            if any(br.get(f"{_W}type") == "page" for br in run.element.iter(f"{_W}br")):
                return 1.0
    return 0.0


def compare_font_names(result: Any, rules: dict[str, Any]) -> float:
    """1.0 when every run of every body paragraph uses ``rules["font_name"]``."""
    doc = _open(result)
    if doc is None:
        return 0.0
    want = rules["font_name"]
    return float(all(run.font.name == want for p in doc.paragraphs for run in p.runs))


def evaluate_colored_words_in_tables(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the texts agree and the table words are coloured by their first letter (module docstring)."""
    from rlanything_core.envs.desktop.metrics.color import delta_e_2000, srgb_to_lab

    docs = _open_both(result, expected)
    if docs is None or not compare_docx_files(result, expected):
        return 0.0
    threshold = float(options.get("threshold", 3.5))
    red, blue = srgb_to_lab((255, 0, 0)), srgb_to_lab((0, 0, 255))
    for table in docs[0].tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        if not run.text:
                            continue
                        rgb = run.font.color.rgb if run.font.color is not None and run.font.color.type else None
                        if rgb is None:
                            return 0.0
                        want = red if run.text[0].lower() in "aeiou" else blue
                        if delta_e_2000(srgb_to_lab(tuple(rgb)), want) > threshold:
                            return 0.0
    return 1.0
