"""Whether the real desktop (Xvfb, LibreOffice, xdotool, openbox) can run here; imported by the desktop tests."""

from __future__ import annotations

import shutil
from pathlib import Path

NEEDED = ("Xvfb", "soffice", "xdotool", "openbox")


def desktop_missing() -> str:
    """Why the real desktop cannot run here ('' when it can)."""
    missing = [n for n in NEEDED if shutil.which(n) is None]
    return f"missing {missing} (apt-get install -y xvfb xdotool openbox libreoffice-calc)" if missing else ""


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed process waiting to be reaped is not running)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
