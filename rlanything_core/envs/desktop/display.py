"""One virtual X display (Xvfb) per worker: start on a free display number, screenshot, stop.

Xvfb picks the number itself (``-displayfd``), so parallel workers never race for ``:99``. The display listens on its
Unix socket only (``-nolisten tcp``), which is the one thing the action sandbox is allowed to reach.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["DisplayError", "XDisplay", "require_binaries"]


class DisplayError(RuntimeError):
    """The display or a program on it could not be started or reached."""


def require_binaries(*names: str) -> None:
    """Raise :class:`DisplayError` naming every missing program (with the Debian packages that provide them)."""
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        raise DisplayError(
            f"missing programs {missing}; on Debian/Ubuntu: apt-get install -y xvfb xdotool x11-utils scrot "
            "libreoffice-calc bubblewrap"
        )


class XDisplay:
    """An Xvfb server of ``width x height x 24`` on a free display number.

    Args:
        width: screen width, pixels.
        height: screen height, pixels.
        start_timeout_s: how long to wait for Xvfb to announce its display number.
        window_manager: a window manager to run on the display (``openbox``: dialogs get the keyboard focus and
            windows can be activated, as on a desktop); ``None`` runs bare X, where focus follows the pointer.

    Attributes:
        name: the ``DISPLAY`` value (``":N"``).
        socket_path: the server's Unix socket, ``/tmp/.X11-unix/XN``.
    """

    def __init__(
        self,
        *,
        width: int = 1280,
        height: int = 800,
        start_timeout_s: float = 20.0,
        window_manager: str | None = "openbox",
    ) -> None:
        if width < 64 or height < 64:
            raise ValueError(f"width/height must be >= 64, got {width}x{height}")
        require_binaries("Xvfb")
        self.width = width
        self.height = height
        read_fd, write_fd = os.pipe()
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                pass_fds=(write_fd,),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        number = self._read_number(read_fd, start_timeout_s)
        self.number = number
        self.name = f":{number}"
        self.socket_path = f"/tmp/.X11-unix/X{number}"
        self._wm: subprocess.Popen[bytes] | None = None
        if window_manager is not None:
            require_binaries(window_manager)
            self._wm = subprocess.Popen(
                [window_manager, "--sm-disable"] if window_manager == "openbox" else [window_manager],
                env={**self.env(), "HOME": "/nonexistent"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _read_number(self, fd: int, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        data = b""
        try:
            os.set_blocking(fd, False)
            while time.monotonic() < deadline:
                try:
                    chunk = os.read(fd, 64)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    data += chunk
                    if data.endswith(b"\n"):
                        return int(data.strip())
                elif chunk == b"" or (self._proc is not None and self._proc.poll() is not None):
                    break
                time.sleep(0.02)
        finally:
            os.close(fd)
        self.close()
        raise DisplayError(f"Xvfb did not start within {timeout_s:.0f}s (announced {data!r})")

    @property
    def alive(self) -> bool:
        """Whether the server process is still running."""
        return self._proc is not None and self._proc.poll() is None

    def env(self) -> dict[str, str]:
        """A minimal environment for programs on this display."""
        return {"DISPLAY": self.name, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}

    def root_properties(self) -> dict[str, tuple[int, int, Any]]:
        """The root window's properties: name -> ``(type atom, format, value)`` (read with python-xlib)."""
        from Xlib.display import Display

        conn = Display(self.name)
        try:
            root = conn.screen().root
            found: dict[str, tuple[int, int, Any]] = {}
            for atom in root.list_properties():
                prop = root.get_full_property(atom, 0)  # 0: AnyPropertyType
                if prop is not None:
                    found[conn.get_atom_name(atom)] = (prop.property_type, prop.format, prop.value)
            return found
        finally:
            conn.close()

    def restore_root_properties(self, saved: dict[str, tuple[int, int, Any]]) -> list[str]:
        """Put the root window's properties back to ``saved``; returns the names deleted or restored.

        Cut buffers and any property a client added are deleted; a changed value is restored, except the window
        manager's own state (``_NET_*``, ``_OB_*``), which it keeps current itself.
        """
        from Xlib.display import Display

        conn = Display(self.name)
        changed = []
        try:
            root = conn.screen().root
            for name, (kind, fmt, value) in self.root_properties().items():
                if name not in saved:
                    root.delete_property(conn.intern_atom(name))
                    changed.append(name)
                elif not name.startswith(("_NET_", "_OB_")) and saved[name] != (kind, fmt, value):
                    old_kind, old_fmt, old_value = saved[name]
                    root.change_property(conn.intern_atom(name), old_kind, old_fmt, old_value)
                    changed.append(name)
            conn.sync()
            return changed
        finally:
            conn.close()

    def screenshot(self) -> Any:
        """The whole screen as a ``PIL.Image`` (RGB, ``height x width``)."""
        from PIL import ImageGrab

        if not self.alive:
            raise DisplayError(f"display {self.name} is not running")
        return ImageGrab.grab(xdisplay=self.name)

    def save_screenshot(self, path: str | Path) -> Path:
        """Write a PNG screenshot to ``path``."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.screenshot().save(out, format="PNG")
        return out

    def close(self) -> None:
        """Stop the window manager and the server (SIGTERM, then SIGKILL)."""
        wm, self._wm = getattr(self, "_wm", None), None
        for p in (wm, self._proc):
            if p is not None and p.poll() is None:
                _stop(p)
        self._proc = None

    def __enter__(self) -> XDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after 5 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=5)
