"""Whether the real desktop (Xvfb, LibreOffice, xdotool, openbox) can run here; imported by the desktop tests."""

from __future__ import annotations

import shutil

NEEDED = ("Xvfb", "soffice", "xdotool", "openbox")


def desktop_missing() -> str:
    """Why the real desktop cannot run here ('' when it can)."""
    missing = [n for n in NEEDED if shutil.which(n) is None]
    return f"missing {missing} (apt-get install -y xvfb xdotool openbox libreoffice-calc)" if missing else ""
