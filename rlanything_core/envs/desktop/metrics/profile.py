"""OSWorld's metrics on LibreOffice's settings file, ``registrymodifications.xcu`` (the user profile's registry).

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/docs.py`` (``find_default_font``) and
``slides.py`` (``check_presenter_console_disable``, ``check_auto_saving_time``), Apache-2.0; the code here is ours.
The tasks name the file at its VM path, ``/home/user/.config/libreoffice/4/user/registrymodifications.xcu``; the
``vm_file`` getter reads it from the running LibreOffice's private profile (:mod:`..getters`). LibreOffice writes
the file when it saves its settings; a missing or unreadable file scores 0.

* ``find_default_font(xcu, rules={"font_name"})``: Writer's ``DefaultFont/Standard`` is that font.
* ``check_presenter_console_disable(xcu)``: Impress's ``Misc/Start/EnablePresenterScreen`` is ``false``.
* ``check_auto_saving_time(xcu, rules={"minutes"})``: ``Save/Document/AutoSaveTimeIntervall`` is that many minutes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

__all__ = ["check_auto_saving_time", "check_presenter_console_disable", "find_default_font", "registry_value"]

_OOR = "{http://openoffice.org/2001/registry}"


def registry_value(xcu: Any, item_path: str, prop: str) -> str | None:
    """The last value of ``prop`` under the item at ``item_path`` in an ``.xcu`` file (None: absent or unreadable)."""
    if not xcu or not Path(str(xcu)).is_file():
        return None
    try:
        root = ElementTree.parse(str(xcu)).getroot()
    except (ElementTree.ParseError, OSError):
        return None
    found = None
    for item in root.iter("item"):
        if item.get(f"{_OOR}path") != item_path:
            continue
        for node in item.iter("prop"):
            if node.get(f"{_OOR}name") == prop:
                value = node.find("value")
                found = value.text if value is not None else None
    return found


def find_default_font(xcu: Any, rules: dict[str, Any]) -> float:
    """1.0 when Writer's default (Standard) font is ``rules["font_name"]``."""
    return float(registry_value(xcu, "/org.openoffice.Office.Writer/DefaultFont", "Standard") == rules["font_name"])


def check_presenter_console_disable(xcu: Any) -> float:
    """1.0 when Impress's presenter console is switched off."""
    value = registry_value(xcu, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
    return float(value is not None and value.lower() == "false")


def check_auto_saving_time(xcu: Any, rules: dict[str, Any]) -> float:
    """1.0 when the auto-recovery interval is ``rules["minutes"]`` minutes."""
    value = registry_value(xcu, "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
    try:
        return float(value is not None and int(value) == int(rules["minutes"]))
    except ValueError:
        return 0.0
