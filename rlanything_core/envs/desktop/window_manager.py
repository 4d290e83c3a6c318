"""The episode's window manager: openbox in the app sandbox as the app uid, configured to run nothing.

A window manager is what makes dialogs take the keyboard focus and lets windows be activated, as on OSWorld's
desktop. It is also a launcher: Debian's openbox configuration opens a menu on the desktop with "Terminal emulator"
and a browser, and binds Print to ``scrot``; run as root outside any sandbox, a right-click on the desktop was a root
shell. Here openbox is one more app of the episode (:class:`~.app_sandbox.AppSandbox`: its pid namespace, its uid,
its file system, killed with the episode's other apps), and its configuration, laid into the sandbox's read-only
``/etc/xdg/openbox`` from memory, has no menu, no key binding and no mouse binding that executes a program; only
focus, raise, move, resize and the window buttons. Openbox's own home and cache (``HOME``, ``XDG_*``) lie in the
episode's ``/tmp``; ``XDG_CONFIG_HOME`` points at the read-only configuration, so a ``rc.xml`` written into the
agent's home is never read (openbox re-reads its configuration when any client asks it to reconfigure).
"""

from __future__ import annotations

import subprocess
import time

from rlanything_core.envs.desktop.app_sandbox import AppSandbox
from rlanything_core.envs.desktop.display import DisplayError, require_binaries

__all__ = [
    "OPENBOX_CONFIG_DIR",
    "OPENBOX_MENU",
    "OPENBOX_RC",
    "start_window_manager",
    "wait_window_manager",
    "wm_running",
]

OPENBOX_CONFIG_DIR = "/etc/xdg/openbox"
"""Where the configuration appears inside the window manager's sandbox (read-only, from memory)."""

_FOCUS_RAISE = '<action name="Focus"/><action name="Raise"/>'
OPENBOX_RC = f"""<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <resistance><strength>0</strength><screen_edge_strength>0</screen_edge_strength></resistance>
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy></placement>
  <theme><name>Clearlooks</name><titleLayout>NLMC</titleLayout></theme>
  <desktops><number>1</number></desktops>
  <keyboard/>
  <mouse>
    <dragThreshold>8</dragThreshold>
    <doubleClickTime>200</doubleClickTime>
    <context name="Frame">
      <mousebind button="A-Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="A-Left" action="Drag"><action name="Move"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
      <mousebind button="Left" action="DoubleClick"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Client">
      <mousebind button="Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Middle" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Right" action="Press">{_FOCUS_RAISE}</mousebind>
    </context>
    <context name="BLCorner BRCorner TLCorner TRCorner Top Bottom Left Right">
      <mousebind button="Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Left" action="Drag"><action name="Resize"/></mousebind>
    </context>
    <context name="Close">
      <mousebind button="Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Left" action="Click"><action name="Close"/></mousebind>
    </context>
    <context name="Maximize">
      <mousebind button="Left" action="Press">{_FOCUS_RAISE}</mousebind>
      <mousebind button="Left" action="Click"><action name="ToggleMaximize"/></mousebind>
    </context>
  </mouse>
  <menu><file>{OPENBOX_CONFIG_DIR}/menu.xml</file></menu>
</openbox_config>
"""
"""Openbox's whole configuration: no key bindings, no menu binding, no ``Execute``/``ShowMenu``/``Restart``."""

OPENBOX_MENU = '<?xml version="1.0" encoding="UTF-8"?>\n<openbox_menu xmlns="http://openbox.org/3.4/menu"/>\n'
"""An empty menu file (Debian's, with its program launchers, is not visible inside the sandbox either)."""

_WM_ENV = {
    "HOME": "/tmp/.wm",
    "XDG_CONFIG_HOME": "/etc/xdg",
    "XDG_CONFIG_DIRS": "/etc/xdg",
    "XDG_CACHE_HOME": "/tmp/.wm/cache",
    "XDG_DATA_HOME": "/tmp/.wm/data",
}


def wm_running(display_name: str) -> bool:
    """Whether a window manager manages ``display_name`` (EWMH: the root's ``_NET_SUPPORTING_WM_CHECK`` is set)."""
    from Xlib.display import Display

    conn = Display(display_name)
    try:
        atom = conn.intern_atom("_NET_SUPPORTING_WM_CHECK", only_if_exists=True)
        return bool(atom) and conn.screen().root.get_full_property(atom, 0) is not None
    finally:
        conn.close()


def start_window_manager(apps: AppSandbox) -> subprocess.Popen[bytes]:
    """Start openbox in ``apps``'s sandbox on its display (:func:`wait_window_manager` waits until it manages it)."""
    require_binaries("openbox")
    argv = ["openbox", "--sm-disable", "--config-file", f"{OPENBOX_CONFIG_DIR}/rc.xml"]
    config = {"rc.xml": OPENBOX_RC, "menu.xml": OPENBOX_MENU}
    files = {f"{OPENBOX_CONFIG_DIR}/{name}": text.encode() for name, text in config.items()}
    return apps.launch(argv, env=_WM_ENV, files=files)


def wait_window_manager(display_name: str, proc: subprocess.Popen[bytes], *, timeout_s: float = 10.0) -> None:
    """Wait until ``proc`` (:func:`start_window_manager`'s) manages ``display_name``.

    Raises:
        DisplayError: it exited or did not take the screen within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while not wm_running(display_name):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise DisplayError(f"openbox did not manage {display_name} (exit status {proc.poll()})")
        time.sleep(0.02)
