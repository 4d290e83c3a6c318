"""OSWorld's PDF metrics, written from their semantics.

Sources: OSWorld's ``desktop_env/evaluators/metrics/pdf.py`` and ``chrome.py`` (Apache-2.0); the code here is ours.

* ``check_pdf_pages(pdf, rules={relation, ref_value})``: the page count stands in that relation to the value.
* ``compare_pdfs(result, expected)``: the mean, over the file pairs, of the similarity of the PDFs' texts, as
  rapidfuzz's ``fuzz.ratio`` defines it (``2 * LCS / (len1 + len2)``, 1.0 for two empty texts; :func:`text_ratio`).
  The text is each page's extracted text joined and stripped; it is extracted with pypdf where OSWorld uses PyMuPDF,
  so identical files score 1.0 as there while a partly matching pair can score a little differently.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

__all__ = ["RELATIONS", "check_pdf_pages", "check_pdf_rules", "compare_pdfs", "lcs_length", "text_ratio"]

RELATIONS = ("eq", "ne", "lt", "le", "gt", "ge")


def check_pdf_rules(rules: Any) -> None:
    """Raise ``ValueError`` unless ``rules`` is ``{"relation": one of RELATIONS, "ref_value": int}``."""
    if not isinstance(rules, dict) or rules.get("relation") not in RELATIONS:
        raise ValueError(f"check_pdf_pages rules need 'relation' in {RELATIONS}, got {rules!r}")
    if isinstance(rules.get("ref_value"), bool) or not isinstance(rules.get("ref_value"), int):
        raise ValueError(f"check_pdf_pages rules need an int 'ref_value', got {rules.get('ref_value')!r}")


def check_pdf_pages(pdf_file: str | None, rules: dict[str, Any]) -> float:
    """1.0 when the PDF's page count stands in ``rules["relation"]`` to ``rules["ref_value"]``.

    A missing or unreadable PDF scores 0.0.
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    if pdf_file is None or not Path(pdf_file).is_file():
        return 0.0
    try:
        pages = len(PdfReader(pdf_file).pages)
    except (PdfReadError, OSError, ValueError):
        return 0.0
    return float(getattr(operator, rules["relation"])(pages, rules["ref_value"]))


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Hyyro 2004).

    Examples:
        >>> lcs_length("kitten", "sitting")
        4
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for ch in b:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def text_ratio(a: str, b: str) -> float:
    """Indel similarity in ``[0, 1]``: ``2 * LCS / (len(a) + len(b))`` (1.0 for two empty strings)."""
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


def _pdf_text(path: str) -> str:
    from pypdf import PdfReader

    return "".join(page.extract_text() or "" for page in PdfReader(path).pages).strip()


def compare_pdfs(result: str | list[str] | None, expected: str | list[str] | None) -> float:
    """Mean text similarity of the PDF pairs (module docstring); an unreadable pair adds 0."""
    from pypdf.errors import PdfReadError

    if not result or not expected:
        return 0.0
    results = result if isinstance(result, list) else [result]
    expecteds = expected if isinstance(expected, list) else [expected]
    total = 0.0
    for one, two in zip(results, expecteds):
        if not one or not two or not Path(one).is_file() or not Path(two).is_file():
            continue
        try:
            total += text_ratio(_pdf_text(one), _pdf_text(two))
        except (PdfReadError, OSError, ValueError):
            continue
    return total / len(expecteds)
