"""The terminal window OSWorld's OS tasks open: Debian's ``xterm``, started in the episode's app sandbox.

OSWorld's set-up opens GNOME Terminal with Ctrl+Alt+T and then activates the window named ``Terminal``
(``activate_window``; OSWorld, arXiv 2404.07972, ``desktop_env/controllers/setup.py``). The local desktop binds no
such key, so the ``activate_window`` step of :mod:`.config_steps` starts the terminal itself when no window of that
name exists. It is started like every other app (:class:`~rlanything_core.envs.desktop.app_sandbox.AppSandbox`):
as the episode's unprivileged uid, seeing ``/usr``, the display, ``/home/user`` and the episode's private ``/tmp``
only, with no network; the shell it runs is therefore no door the app sandbox does not already hold. Its
``gsettings`` writes the episode's keyfile (:mod:`.gsettings`), the store the tasks' checks read.
"""

from __future__ import annotations

from rlanything_core.envs.desktop.display import require_binaries
from rlanything_core.envs.desktop.gsettings import GSETTINGS_ENV
from rlanything_core.envs.desktop.office import OfficeApp, find_windows

__all__ = ["TERMINAL_TITLE", "is_terminal", "open_terminal", "terminal_argv"]

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
