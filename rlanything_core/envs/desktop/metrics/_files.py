"""Reading a result or expected file for a metric: a missing or unreadable file is a wrong result, not an error.

Every metric scores 0 for a file that is absent or that its library cannot read (OSWorld's metrics do the same); this
is that rule once, for the readers of ``docs``, ``slides`` and ``odt`` (office files are zip files of XML parts).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from xml.etree import ElementTree

__all__ = ["read_or_none", "zip_xml"]

T = TypeVar("T")


def read_or_none(
    path: Any, read: Callable[[str], T], *, errors: tuple[type[BaseException], ...] = (Exception,)
) -> T | None:
    """``read(str(path))``, or None when ``path`` is empty, is not a file, or ``read`` raises one of ``errors``.

    Args:
        path: the file (a ``str`` or ``PathLike``; ``None`` or ``""``: no file).
        read: the library's reader (``docx.Document``, ``pptx.Presentation``, ...).
        errors: what ``read`` raises for a broken or foreign file (default: anything, since python-docx and
            python-pptx raise a variety); other exceptions propagate.

    Examples:
        >>> read_or_none("", open) is None
        True
        >>> read_or_none("/no/such/file", open) is None
        True
    """
    if not path or not Path(str(path)).is_file():
        return None
    try:
        return read(str(path))
    except errors:  # a broken or foreign file is a wrong result, whatever its library raises for it
        return None


def zip_xml(path: Any, member: str) -> ElementTree.Element | None:
    """The parsed XML part ``member`` of the zip file at ``path``, or None (no file, not a zip, no such part, not XML).

    Examples:
        >>> zip_xml("/no/such/file.odt", "content.xml") is None
        True
    """

    def read(file: str) -> ElementTree.Element:
        with zipfile.ZipFile(file) as z:
            return ElementTree.fromstring(z.read(member))

    return read_or_none(path, read, errors=(zipfile.BadZipFile, KeyError, ElementTree.ParseError, OSError))
