"""OSWorld's PDF metric ``check_pdf_pages`` (written from ``desktop_env/evaluators/metrics/pdf.py``, Apache-2.0)."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

__all__ = ["RELATIONS", "check_pdf_pages", "check_pdf_rules"]

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
