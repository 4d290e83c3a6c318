"""LibreOffice on a virtual display: a private profile, start/open, window lookup, clean stop.

The profile is preset so that no dialog interrupts an episode: no tip of the day, no "keep current format?" question
when saving xlsx, no first-run wizard, and no AutoInput (Calc's completion of typed text from the column, which turns
a typed "N" into "North" and makes typed answers depend on the sheet's contents).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rlanything_core.envs.desktop.display import DisplayError, XDisplay, require_binaries

__all__ = ["OfficeApp", "find_windows", "focus_window", "write_profile"]

_PROFILE_ITEMS = (
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "false"),
    ("/org.openoffice.Office.Calc/Input", "AutoInput", "false"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "99.0"),
    ("/org.openoffice.Office.Common/Misc", "UseSystemFileDialog", "false"),
)


def write_profile(root: str | Path) -> Path:
    """Create a LibreOffice user profile under ``root`` with the settings above; returns the profile directory."""
    profile = Path(root)
    (profile / "user").mkdir(parents=True, exist_ok=True)
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, value in _PROFILE_ITEMS
    )
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )
    (profile / "user" / "registrymodifications.xcu").write_text(xml)
    return profile


def find_windows(display: XDisplay, name: str, *, strict: bool = False) -> list[str]:
    """X window ids whose title contains ``name`` (equals it when ``strict``), via ``xdotool search``."""
    require_binaries("xdotool")
    proc = subprocess.run(
        ["xdotool", "search", "--name", name], env=display.env(), capture_output=True, text=True, timeout=10
    )
    ids = proc.stdout.split()
    if not strict:
        return ids
    exact = []
    for wid in ids:
        got = subprocess.run(
            ["xdotool", "getwindowname", wid], env=display.env(), capture_output=True, text=True, timeout=10
        )
        if got.stdout.rstrip("\n") == name:
            exact.append(wid)
    return exact


def focus_window(display: XDisplay, window_id: str) -> None:
    """Raise ``window_id``, cover the screen with it and give it the keyboard focus (no window manager needed)."""
    cmd = ["xdotool", "windowmove", window_id, "0", "0", "windowsize", window_id, str(display.width)]
    cmd += [str(display.height), "windowraise", window_id, "windowactivate", window_id, "windowfocus", window_id]
    subprocess.run(cmd, env=display.env(), capture_output=True, timeout=10, check=False)


class OfficeApp:
    """LibreOffice processes started on one display with one private profile.

    Args:
        display: the display the windows appear on.
        profile_dir: the private profile (created by :func:`write_profile` when missing).
        window_timeout_s: how long :meth:`open` waits for the document's window.
        ready_s: pause after the window appears (LibreOffice maps its window before it takes input: a click in
            that moment is lost).
    """

    def __init__(
        self, display: XDisplay, profile_dir: str | Path, *, window_timeout_s: float = 60.0, ready_s: float = 0.5
    ) -> None:
        require_binaries("soffice", "xdotool")
        self.display = display
        self.profile_dir = Path(profile_dir).resolve()
        if not (self.profile_dir / "user" / "registrymodifications.xcu").is_file():
            write_profile(self.profile_dir)
        self.window_timeout_s = window_timeout_s
        self.ready_s = ready_s
        self._procs: list[subprocess.Popen[bytes]] = []

    def launch(self, args: list[str], *, wait_for: str | None = None) -> None:
        """Run ``soffice <args>`` with the private profile; wait for a window titled ``wait_for`` when given.

        A second call while LibreOffice runs hands the arguments to the running instance (its own pipe).
        """
        cmd = ["soffice", f"-env:UserInstallation={self.profile_dir.as_uri()}", "--norestore", "--nologo", *args]
        env = {**self.display.env(), "HOME": str(self.profile_dir), "SAL_USE_VCLPLUGIN": "gen"}
        before = frozenset(find_windows(self.display, wait_for)) if wait_for is not None else frozenset()
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self._procs.append(proc)
        if wait_for is not None:
            self.wait_window(wait_for, ignore=before)

    def open(self, path: str | Path) -> None:
        """Open ``path`` (a spreadsheet) and wait for its window, which is then focused full-screen."""
        file = Path(path)
        if not file.is_file():
            raise FileNotFoundError(f"cannot open {file}: no such file")
        self.launch(["--calc", str(file)], wait_for=file.name)

    def wait_window(self, title: str, *, ignore: frozenset[str] = frozenset()) -> str:
        """Wait for a window whose title contains ``title`` (not one of ``ignore``); focus it; return its id."""
        deadline = time.monotonic() + self.window_timeout_s
        while time.monotonic() < deadline:
            ids = [i for i in find_windows(self.display, title) if i not in ignore]
            if ids:
                time.sleep(self.ready_s)
                focus_window(self.display, ids[-1])
                return ids[-1]
            if not self.display.alive:
                raise DisplayError(f"display {self.display.name} died while waiting for {title!r}")
            time.sleep(0.1)
        raise DisplayError(f"no window titled {title!r} appeared within {self.window_timeout_s:.0f}s")

    def pids(self) -> list[int]:
        """Every live process using this profile (the launcher, ``oosplash``, ``soffice.bin``)."""
        marker = self.profile_dir.as_uri().encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker in cmdline:
                found.append(int(entry))
        return found

    def close(self) -> None:
        """Stop every LibreOffice process of this profile at once.

        SIGKILL: nothing of the episode is kept, and a polite SIGTERM costs LibreOffice seconds; ``--norestore``
        keeps the next start from offering document recovery.
        """
        for sig, wait_s in ((signal.SIGKILL, 5.0),):
            pids = self.pids()
            for proc in self._procs:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        pass
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait_s
            while self.pids() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not self.pids():
                break
        for proc in self._procs:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()
        # the X server drops a killed client's windows a moment later: wait, so the next open sees only its own
        deadline = time.monotonic() + 3.0
        while self.display.alive and find_windows(self.display, "LibreOffice") and time.monotonic() < deadline:
            time.sleep(0.05)
        # the lock file would make the next start ask about a "locked" profile
        lock = self.profile_dir / "user" / ".lock"
        if lock.exists():
            lock.unlink()

    def reset_profile(self) -> None:
        """Forget everything LibreOffice wrote into the profile (recent files, window sizes): a fresh start."""
        self.close()
        shutil.rmtree(self.profile_dir, ignore_errors=True)
        write_profile(self.profile_dir)
