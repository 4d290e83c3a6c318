"""OpenDocument text (``.odt``) readers for OSWorld's Writer metrics, on ``content.xml`` (no odfpy needed).

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/docs.py`` (Apache-2.0; it reads with odfpy);
the code here is ours.

* :func:`odt_paragraphs`: each ``text:p`` of the document, in order, as the text directly inside it plus the text
  directly inside its ``text:span`` children (what OSWorld's ``compare_docx_files`` compares for ``.odt`` files).
* :func:`has_yellow_highlight`: whether a span of the document uses an automatic style with a yellow (``#ffff00``)
  background (``metrics.docs.check_highlighted_words`` builds the task's check on it).
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from rlanything_core.envs.desktop.metrics._files import zip_xml

__all__ = ["has_yellow_highlight", "odt_paragraphs"]

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"


def _content(path: Any) -> ElementTree.Element | None:
    return zip_xml(path, "content.xml") if str(path).endswith(".odt") else None


def _direct_text(node: ElementTree.Element) -> list[str]:
    """The text nodes that are children of ``node`` (its text and its children's tails)."""
    parts = [node.text or ""]
    parts += [child.tail or "" for child in node]
    return parts


def odt_paragraphs(path: Any) -> list[str] | None:
    """The paragraph texts of an ``.odt`` file (module docstring), or None when it does not read."""
    root = _content(path)
    if root is None:
        return None
    out = []
    for paragraph in root.iter(f"{_TEXT}p"):
        parts = [paragraph.text or ""]
        for child in paragraph:
            if child.tag == f"{_TEXT}span":
                parts += _direct_text(child)
            parts.append(child.tail or "")
        out.append("".join(parts))
    return out


def has_yellow_highlight(path: Any) -> bool | None:
    """Whether a span of the ``.odt`` file uses a style with a yellow background; ``None`` if it cannot be read."""
    root = _content(path)
    if root is None:
        return None
    yellow = set()
    for style in root.iter(f"{_STYLE}style"):
        for props in style:
            if props.get(f"{_FO}background-color", "").lower() == "#ffff00":
                yellow.add(style.get(f"{_STYLE}name"))
    return any(span.get(f"{_TEXT}style-name") in yellow for span in root.iter(f"{_TEXT}span"))
