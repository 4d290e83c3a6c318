"""One virtual X display (Xvfb) per worker: start on a free display number, screenshot, stop.

Xvfb picks the number itself (``-displayfd``), so parallel workers never race for ``:99``. The display listens on its
Unix socket only (``-nolisten tcp``), which is the one thing the action sandbox is allowed to reach. It runs as the
episode's app uid when the environment is root (never as root: a client can make the server read font paths).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["DisplayError", "XDisplay", "require_binaries"]


SOCKET_FOLDER = "/tmp/.X11-unix"
"""Where X servers put their Unix sockets (``X<number>``)."""


class DisplayError(RuntimeError):
    """The display or a program on it could not be started or reached."""


@dataclass
class _Server:
    """A started Xvfb: the process, the pipe it announces its display number on, and its stderr.

    The stderr is a file: a long-lived server writing to an unread pipe would block once the pipe filled.
    """

    proc: subprocess.Popen[bytes]
    announce_fd: int
    log: IO[bytes]


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

    The server runs bare: the window manager is an app of the episode (:mod:`.window_manager`, started in the app
    sandbox as the app uid), never a program of this trusted process. :meth:`restart` replaces the server with a
    fresh one (a new episode starts on a display no earlier episode touched: no atom, property, retained window or
    font path carries over, whatever the last episode stored, at the cost of one server start, about 0.1 s).

    Args:
        width: screen width, pixels.
        height: screen height, pixels.
        start_timeout_s: how long to wait for Xvfb to announce its display number.
        uid: the unprivileged uid the server runs as when this process is root (``None``: as the caller); the
            server reads the font paths a client sets, so it holds no more rights than the apps.

    Attributes:
        name: the ``DISPLAY`` value (``":N"``; a restart may change it).
        socket_path: the server's Unix socket, ``/tmp/.X11-unix/XN``.
    """

    def __init__(
        self,
        *,
        width: int = 1280,
        height: int = 800,
        start_timeout_s: float = 20.0,
        uid: int | None = None,
    ) -> None:
        if width < 64 or height < 64:
            raise ValueError(f"width/height must be >= 64, got {width}x{height}")
        if uid is not None and (uid <= 0 or os.getuid() != 0):
            raise ValueError(f"uid must be an unprivileged uid (> 0) and needs root to switch to, got {uid!r}")
        require_binaries("Xvfb")
        self.width = width
        self.height = height
        self.uid = uid
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._spare: _Server | None = None  # the next episode's server, starting
        self._adopt(self._launch())

    def _launch(self) -> _Server:
        """Start a server (it announces its number on the returned pipe when it listens)."""
        if self.uid is not None:
            # an unprivileged server creates its socket in the shared socket folder only when that folder exists
            socket_folder()
        read_fd, write_fd = os.pipe()
        log = tempfile.TemporaryFile()  # unlinked: only this process can read what the server said
        screen = f"{self.width}x{self.height}x24"
        try:
            proc = subprocess.Popen(
                ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", screen, "-nolisten", "tcp"],
                pass_fds=(write_fd,),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                user=self.uid,
                group=self.uid,
                extra_groups=None if self.uid is None else [],
            )
        except BaseException:
            os.close(read_fd)
            log.close()
            raise
        finally:
            os.close(write_fd)
        return _Server(proc, read_fd, log)

    def _adopt(self, server: _Server) -> None:
        self._proc, self._log = server.proc, server.log
        number = self._read_number(server.announce_fd, self.start_timeout_s)
        self.number = number
        self.name = f":{number}"
        self.socket_path = f"{SOCKET_FOLDER}/X{number}"
        self._socket_id = _file_id(self.socket_path)  # only this socket is removed after the server stops

    def restart(self) -> None:
        """Stop the server and switch to a fresh one (every client of the old one is disconnected).

        The fresh server was started by the previous restart and has had no client (no sandbox binds its socket
        before it is the display); the next one starts now, in the background, so a restart costs no server start.
        """
        spare, self._spare = self._spare, None
        self._stop_current()
        if spare is not None and spare.proc.poll() is not None:  # it died unused: say nothing, start another
            _stop_spare(spare)
            spare = None
        self._adopt(spare if spare is not None else self._launch())
        self._spare = self._launch()

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
                time.sleep(0.01)
        finally:
            os.close(fd)
        proc, log = self._proc, self._log
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)  # its pipe's end came with its exit: let the status arrive
        status = None if proc is None else proc.returncode
        self._log = None  # read below, after the servers are stopped
        self.close()
        said = _tail(log) if log is not None else ""
        why = (
            f"exited with status {status} before announcing its display"
            if status is not None
            else f"did not announce its display within {timeout_s:g} s (announced {data!r}; a loaded machine: "
            "raise start_timeout_s)"
        )
        raise DisplayError(f"Xvfb {why}; its stderr: {said or '(nothing)'}")

    @property
    def alive(self) -> bool:
        """Whether the server process is still running."""
        return self._proc is not None and self._proc.poll() is None

    def env(self) -> dict[str, str]:
        """A minimal environment for programs on this display."""
        return {"DISPLAY": self.name, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}

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

    def _stop_current(self) -> None:
        proc, self._proc = self._proc, None
        log, self._log = self._log, None
        if proc is not None and proc.poll() is None:
            _stop(proc)
        if proc is not None and getattr(self, "number", None) is not None:
            _remove_socket(self.number, self._socket_id)
        if log is not None:
            log.close()

    def close(self) -> None:
        """Stop the server and the spare one (SIGTERM, then SIGKILL: a terminated server removes its lock file)."""
        spare, self._spare = getattr(self, "_spare", None), None
        self._stop_current()
        if spare is not None:
            _stop_spare(spare)

    def __enter__(self) -> XDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def socket_folder(path: str = SOCKET_FOLDER) -> None:
    """Make the X servers' socket folder as they need it (root's, sticky, writable by all: 1777), or refuse.

    ``os.makedirs(path, mode=0o1777)`` is cut by the umask (022: 1755), and Xvfb then fails to listen ("Mode of
    /tmp/.X11-unix should be set to 1777"): the folder is made, then given its mode. A root-owned folder with another
    mode (left by that) is given 1777. Anything else there (a link, a file, another user's folder: one that could
    receive or swap the displays' sockets) is refused.

    Raises:
        DisplayError: ``path`` is not a root-owned folder.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)  # nobody else can use it before its owner and mode are checked below
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise DisplayError(f"{path} is not a folder owned by root (mode {stat.filemode(info.st_mode)}, uid "
                           f"{info.st_uid}): remove it, so that no display's socket goes to its owner")  # fmt: skip
    if stat.S_IMODE(info.st_mode) != 0o1777:
        os.chmod(path, 0o1777)


def _stop_spare(spare: _Server) -> None:
    """Stop a server that never became the display, and remove its socket if it could not (see ``_remove_socket``).

    Its number is what it announced (a server announces once it listens; with ``-displayfd`` Xvfb writes no lock
    file). A server killed between making its socket and announcing it would leave the socket: not seen here.
    """
    number = _announced(spare.announce_fd)
    socket_id = None if number is None else _file_id(f"{SOCKET_FOLDER}/X{number}")
    if spare.proc.poll() is None:
        _stop(spare.proc)
    spare.log.close()
    if number is not None:
        _remove_socket(number, socket_id)


def _announced(fd: int) -> int | None:
    """The display number a server has announced on its pipe (``None``: none yet); closes the pipe.

    Xvfb writes the number and its newline in two writes: a server killed between them (or read between them) has
    announced its number all the same, and its socket exists.
    """
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 64).strip()
        return int(data) if data.isdigit() else None
    except (BlockingIOError, ValueError):
        return None
    finally:
        os.close(fd)


def _remove_socket(number: int, socket_id: tuple[int, int, int] | None) -> None:
    """Remove a stopped server's socket (and any lock file) where it could not (a SIGKILL on a loaded machine).

    A socket left in the sticky ``/tmp/.X11-unix`` by a server of another uid makes every later server that picks that
    number die at start ("Cannot establish any listening sockets"): the next display would fail to start, whichever
    run it belongs to. Only the server's own socket (the inode it made, ``socket_id``) is removed: not a socket
    another server made later, nor a link put in its place.
    """
    socket_path = f"{SOCKET_FOLDER}/X{number}"
    with contextlib.suppress(OSError):
        if socket_id is not None and _file_id(socket_path) == socket_id:
            os.unlink(socket_path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"/tmp/.X{number}-lock")


def _tail(log: IO[bytes], limit: int = 2000) -> str:
    """The last ``limit`` bytes a server wrote to its stderr file, as one line; closes the file."""
    with log:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - limit))
        return " | ".join(line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip())


def _file_id(path: str) -> tuple[int, int, int] | None:
    """Which file ``path`` is (a link is not followed): device, inode and change time (inodes are reused at once)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


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
