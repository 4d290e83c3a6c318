"""LibreOffice on a virtual display, inside the episode's app sandbox: a fresh profile, start/open, window lookup, stop.

LibreOffice runs through :class:`~rlanything_core.envs.desktop.app_sandbox.AppSandbox` (bubblewrap, an unprivileged
uid, its own pid namespace, no network, only ``/usr``, the display, ``/home/user`` and its profile visible); the
profile is bound at ``/profile`` inside. The profile is preset so that no dialog interrupts an episode: no tip of the
day, no "keep current format?" question when saving xlsx, no first-run wizard, and no AutoInput (Calc's completion
of typed text from the column, which turns a typed "N" into "North" and makes typed answers depend on the sheet's
contents). It also closes what a hostile agent would use (arXiv 2602.02488 trains the agent against these verdicts,
so they are a security boundary; ``docs/sandbox.md``): macro execution is disabled and the macro security level is
"very high"; the commands that open the Basic IDE, the macro dialogs and Tools > Options (where the expert
configuration could switch macros back on) are disabled; external links in sheets are never updated.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from rlanything_core.envs.desktop.app_sandbox import APP_HOME, AppSandbox, give_tree
from rlanything_core.envs.desktop.display import DisplayError, XDisplay, require_binaries

__all__ = ["DISABLED_COMMANDS", "PROFILE_MOUNT", "OfficeApp", "find_windows", "focus_window", "write_profile"]

PROFILE_MOUNT = "/profile"
"""Where the episode's LibreOffice profile appears inside the app sandbox."""

_PROFILE_ITEMS = (
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "false"),
    ("/org.openoffice.Office.Calc/Input", "AutoInput", "false"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "99.0"),
    ("/org.openoffice.Office.Common/Misc", "UseSystemFileDialog", "false"),
    # no macro runs: none from documents (level 3 = trusted locations only, none configured), none at all
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "CheckDocumentEvents", "true"),
    # Calc's external links (DDE, other files) are never updated on load (1 = never)
    ("/org.openoffice.Office.Calc/Content/Update", "Link", "1"),
    ("/org.openoffice.Office.Writer/Content/Update", "Link", "0"),
    ("/org.openoffice.Office.Java/VirtualMachine", "Enable", "false"),
)

DISABLED_COMMANDS = (
    "BasicIDEAppear",
    "MacroDialog",
    "MacroOrganizer",
    "RunMacro",
    "ScriptOrganizer",
    "MacroRecorder",
    "StopRecording",
    "MacroSignature",
    "OptionsTreeDialog",
    "OpenHyperlinkOnCursor",
    "OpenXMLFilterSettings",
    "ManageXMLSource",
)
"""UNO commands LibreOffice refuses in an episode (menus grey them out, shortcuts do nothing): the Basic IDE and
every macro dialog, Tools > Options (its expert configuration could re-enable macros), following hyperlinks, XML
filter/source dialogs that run transformations."""


def write_profile(root: str | Path, *, disabled_commands: tuple[str, ...] = DISABLED_COMMANDS) -> Path:
    """Create a LibreOffice user profile under ``root`` with the settings above; returns the profile directory."""
    profile = Path(root)
    (profile / "user").mkdir(parents=True, exist_ok=True)
    lines = [
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, value in _PROFILE_ITEMS
    ]
    lines += [
        f'<item oor:path="/org.openoffice.Office.Commands/Execute/Disabled"><node oor:name="rla{i}" oor:op="replace">'
        f'<prop oor:name="Command" oor:op="fuse"><value>{command}</value></prop></node></item>'
        for i, command in enumerate(disabled_commands)
    ]
    items = "\n".join(lines)
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
    """LibreOffice started on one display, in one episode's app sandbox, with one private profile.

    Args:
        display: the display the windows appear on.
        profile_dir: the private profile on the host (created by :func:`write_profile` when missing), bound at
            :data:`PROFILE_MOUNT` inside.
        apps: the episode's app sandbox (its ``rw_binds`` must bind ``profile_dir`` at :data:`PROFILE_MOUNT`;
            :meth:`for_episode` builds one so).
        window_timeout_s: how long :meth:`open` waits for the document's window.
        ready_s: pause after the window appears (LibreOffice maps its window before it takes input: a click in
            that moment is lost).
    """

    def __init__(
        self,
        display: XDisplay,
        profile_dir: str | Path,
        apps: AppSandbox,
        *,
        window_timeout_s: float = 60.0,
        ready_s: float = 0.5,
    ) -> None:
        require_binaries("soffice", "xdotool")
        self.display = display
        self.profile_dir = Path(profile_dir).resolve()
        if (str(self.profile_dir), PROFILE_MOUNT) not in apps.rw_binds:
            raise ValueError(f"apps must bind the profile {self.profile_dir} at {PROFILE_MOUNT}: {apps.rw_binds}")
        self.apps = apps
        if not (self.profile_dir / "user" / "registrymodifications.xcu").is_file():
            write_profile(self.profile_dir)
        self.window_timeout_s = window_timeout_s
        self.ready_s = ready_s

    @staticmethod
    def profile_bind(profile_dir: str | Path) -> tuple[str, str]:
        """The ``rw_binds`` entry an app sandbox needs for ``profile_dir``."""
        return (str(Path(profile_dir).resolve()), PROFILE_MOUNT)

    def inside(self, arg: str) -> str:
        """``arg`` as the app sees it: a host path under the episode's home becomes its ``/home/user`` path."""
        if not arg.startswith("/"):
            return arg
        try:
            rel = Path(arg).resolve().relative_to(self.apps.home)
        except ValueError:
            return arg  # a VM path already, or a host path the app cannot see (it then reports it missing)
        return f"{APP_HOME}/{rel}" if str(rel) != "." else APP_HOME

    def launch(self, args: list[str], *, wait_for: str | None = None) -> None:
        """Run ``soffice <args>`` in the app sandbox with the private profile; wait for a window titled ``wait_for``.

        A second call while LibreOffice runs hands the arguments to the running instance (its pipe in the episode's
        ``/tmp``).
        """
        profile = Path(PROFILE_MOUNT).as_uri()
        cmd = ["soffice", f"-env:UserInstallation={profile}", "--norestore", "--nologo", *map(self.inside, args)]
        before = frozenset(find_windows(self.display, wait_for)) if wait_for is not None else frozenset()
        self.apps.launch(cmd, env={"SAL_USE_VCLPLUGIN": "gen"})
        if wait_for is not None:
            self.wait_window(wait_for, ignore=before)

    def open(self, path: str | Path) -> None:
        """Open ``path`` (a spreadsheet in the episode's home) and wait for its window, then focused full-screen."""
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
        """Every live process of the app sandbox (bubblewrap, ``oosplash``, ``soffice.bin`` and what they started)."""
        return self.apps.pids()

    def close(self, *, clear_tmp: bool = True) -> None:
        """Kill every process of the app sandbox at once (``clear_tmp``: see :meth:`AppSandbox.close`).

        SIGKILL: nothing of the episode is kept, and a polite SIGTERM costs LibreOffice seconds; ``--norestore``
        keeps the next start from offering document recovery.
        """
        self.apps.close(clear_tmp=clear_tmp)
        # the X server drops a killed client's windows a moment later: wait, so the next open sees only its own
        deadline = time.monotonic() + 3.0
        while self.display.alive and find_windows(self.display, "LibreOffice") and time.monotonic() < deadline:
            time.sleep(0.05)
        # the lock file would make the next start ask about a "locked" profile
        lock = self.profile_dir / "user" / ".lock"
        if lock.exists():
            lock.unlink()

    def reset_profile(self) -> None:
        """Stop LibreOffice; the next start uses a fresh profile.

        Nothing a macro, a setting or a recent-files list of this episode wrote survives. The fresh profile is a copy
        of a template that LibreOffice populated once (an empty Calc window, started by :meth:`reset_profile` itself
        before any episode, so no agent ever touched it): a start on a populated profile is ~0.6 s faster.
        """
        self.close()
        template = self.profile_dir.with_name(self.profile_dir.name + "-template")
        if not template.is_dir():
            _empty(self.profile_dir)
            write_profile(self.profile_dir)
            self._give_profile()
            self.launch(["--calc"], wait_for="LibreOffice Calc")
            self.close()
            staging = template.with_name(template.name + ".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(self.profile_dir, staging, symlinks=True)
            staging.rename(template)  # atomic: a half-copied template is never used
        _empty(self.profile_dir)
        # into the folder, not in its place: it may be a mount point (the environment's tmpfs)
        shutil.copytree(template, self.profile_dir, symlinks=True, dirs_exist_ok=True)
        self._give_profile()

    def _give_profile(self) -> None:
        if self.apps.uid is not None:
            give_tree(self.profile_dir, self.apps.uid)


def _empty(folder: Path) -> None:
    """Remove everything in ``folder`` (kept itself, or created)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)
