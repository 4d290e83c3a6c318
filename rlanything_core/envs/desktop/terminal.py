"""The terminal window OSWorld's OS tasks open: Debian's ``xterm``, started in the episode's app sandbox.

OSWorld's set-up opens GNOME Terminal with Ctrl+Alt+T and then activates the window named ``Terminal``
(``activate_window``; OSWorld, arXiv 2404.07972, ``desktop_env/controllers/setup.py``). The local desktop binds no
such key by itself: :class:`TerminalKey` grabs Ctrl+Alt+T on the display and the environment opens the terminal
when it was pressed (between actions and set-up steps), and the ``activate_window`` step of :mod:`.config_steps`
starts one when no window of that name exists. It is started like every other app
(:class:`~rlanything_core.envs.desktop.app_sandbox.AppSandbox`): as the episode's unprivileged uid, seeing ``/usr``,
the display, ``/home/user`` and the episode's private ``/tmp`` only, with no network; the shell it runs is therefore
no door the app sandbox does not already hold. Its ``gsettings`` writes the episode's keyfile (:mod:`.gsettings`),
the store the tasks' checks read.
"""

from __future__ import annotations

from typing import Any

from rlanything_core.envs.desktop.display import XDisplay, require_binaries
from rlanything_core.envs.desktop.gsettings import GSETTINGS_ENV
from rlanything_core.envs.desktop.office import OfficeApp, find_windows

__all__ = ["TERMINAL_TITLE", "TerminalKey", "is_terminal", "open_terminal", "terminal_argv"]

TERMINAL_TITLE = "Terminal"
"""The window title OSWorld's tasks activate (GNOME Terminal's)."""


def is_terminal(window_name: str) -> bool:
    """Whether an ``activate_window`` name asks for the terminal."""
    return window_name.strip().lower() == TERMINAL_TITLE.lower()


def terminal_argv() -> list[str]:
    """The xterm command line: an interactive bash in ``/home/user`` (the sandbox's working folder), 80x24.

    The title stays ``Terminal`` (``allowTitleOps: false``): the shell cannot retitle the window out of reach of
    ``activate_window``.
    """
    return [
        "xterm",
        "-T",
        TERMINAL_TITLE,
        "-xrm",
        "*allowTitleOps: false",
        "-geometry",
        "80x24",
        "-e",
        "/bin/bash",
        "-i",
    ]


def open_terminal(office: OfficeApp) -> str:
    """Start a terminal in ``office``'s app sandbox, wait for its window and focus it; returns the window id.

    Raises:
        DisplayError: no terminal window appeared within ``office.window_timeout_s``.
    """
    require_binaries("xterm")
    before = frozenset(find_windows(office.display, TERMINAL_TITLE))
    office.apps.launch(terminal_argv(), env={"SHELL": "/bin/bash", "TERM": "xterm", **GSETTINGS_ENV})
    return office.wait_window(TERMINAL_TITLE, ignore=before)


class TerminalKey:
    """Ctrl+Alt+T on ``display`` opens the terminal, as GNOME's key binding does in OSWorld's VM.

    A passive grab on the root window (python-xlib, this trusted process's own X connection): the keystroke reaches
    this object instead of the focused app, whether typed through XTEST by the action worker or otherwise;
    :meth:`pressed` reads the queued presses without blocking, so the caller opens the terminal between actions.
    """

    def __init__(self, display: XDisplay) -> None:
        self.display = display
        self._conn: Any = None
        self._connect()

    def _connect(self) -> None:
        from Xlib import XK, X
        from Xlib.display import Display

        self._conn = Display(self.display.name)
        root = self._conn.screen().root
        self._keycode = self._conn.keysym_to_keycode(XK.string_to_keysym("t"))
        self._press = X.KeyPress
        base = X.ControlMask | X.Mod1Mask
        for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask):  # Caps Lock and Num Lock on or off
            root.grab_key(self._keycode, base | extra, True, X.GrabModeAsync, X.GrabModeAsync)
        self._conn.sync()

    def reconnect(self) -> None:
        """Grab the key again on the display's current server (after :meth:`XDisplay.restart`)."""
        self.close()
        self._connect()

    def pressed(self) -> bool:
        """Whether Ctrl+Alt+T was pressed since the last call (drains the queue)."""
        from Xlib.error import ConnectionClosedError

        hit = False
        try:
            while self._conn.pending_events():
                event = self._conn.next_event()
                if event.type == self._press and event.detail == self._keycode:
                    hit = True
        except ConnectionClosedError:  # the display died: the environment ends the episode for that
            return False
        return hit

    def close(self) -> None:
        """Release the grab (closing the connection does; a dead display has released it already)."""
        from Xlib.error import ConnectionClosedError

        try:
            self._conn.close()
        except (ConnectionClosedError, OSError):  # the server is gone already (a restart stops it first)
            pass
