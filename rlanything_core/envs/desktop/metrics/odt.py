"""OpenDocument text (``.odt``) readers for OSWorld's Writer metrics, on ``content.xml`` and ``styles.xml``.

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/docs.py`` (Apache-2.0; it reads with odfpy);
the code here is ours. odfpy's ``load`` builds one document from both parts: the body (``content.xml``) and the
master pages with their headers and footers (``styles.xml``), and the automatic styles of both; its
``getElementsByType`` finds elements of either part. So both readers here read both parts (the body first): a
highlight or an edit left in a header or footer is seen, as OSWorld sees it.

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


_PARTS = ("content.xml", "styles.xml")


def _parts(path: Any) -> list[ElementTree.Element] | None:
    """The parsed ``content.xml`` and ``styles.xml`` of an ``.odt`` file (None: not an .odt or no content).

    A file without ``styles.xml`` (valid: the part is optional) is read from its content alone.
    """
    if not str(path).endswith(".odt"):
        return None
    content = zip_xml(path, "content.xml")
    if content is None:
        return None
    styles = zip_xml(path, "styles.xml")
    return [content] if styles is None else [content, styles]


def _direct_text(node: ElementTree.Element) -> list[str]:
    """The text nodes that are children of ``node`` (its text and its children's tails)."""
    parts = [node.text or ""]
    parts += [child.tail or "" for child in node]
    return parts


def odt_paragraphs(path: Any) -> list[str] | None:
    """The paragraph texts of an ``.odt`` file (module docstring), or None when it does not read."""
    roots = _parts(path)
    if roots is None:
        return None
    out = []
    for paragraph in (p for root in roots for p in root.iter(f"{_TEXT}p")):
        parts = [paragraph.text or ""]
        for child in paragraph:
            if child.tag == f"{_TEXT}span":
                parts += _direct_text(child)
            parts.append(child.tail or "")
        out.append("".join(parts))
    return out


def has_yellow_highlight(path: Any) -> bool | None:
    """Whether a span (body, header or footer) has a yellow-background automatic style; ``None``: unreadable.

    Only automatic styles count, as in OSWorld (``doc.automaticstyles``: both parts' ``office:automatic-styles``).
    """
    roots = _parts(path)
    if roots is None:
        return None
    yellow = set()
    autos = [a for root in roots for a in root.iter(f"{_OFFICE}automatic-styles")]
    for style in (s for auto in autos for s in auto.iter(f"{_STYLE}style")):
        for props in style:
            if props.get(f"{_FO}background-color", "").lower() == "#ffff00":
                yellow.add(style.get(f"{_STYLE}name"))
    return any(span.get(f"{_TEXT}style-name") in yellow for root in roots for span in root.iter(f"{_TEXT}span"))
