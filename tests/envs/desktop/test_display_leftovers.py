"""A killed X server's socket is removed with it: a socket left in the sticky /tmp/.X11-unix by another uid makes the
next server that picks its number die at start, so one unclean stop would fail a later display."""

from __future__ import annotations

import os
import select
import shutil
import signal
import time
from typing import Any

import pytest

from rlanything_core.envs.desktop.display import DisplayError, XDisplay

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed (make setup installs it)")


def test_a_killed_server_leaves_no_socket_behind(uid: Any) -> None:
    display = XDisplay(width=320, height=240, uid=uid)
    socket_path = display.socket_path
    assert os.path.exists(socket_path)
    assert display._proc is not None
    os.killpg(display._proc.pid, signal.SIGKILL)  # what the 5 s SIGTERM deadline does on a loaded machine
    display._proc.wait(timeout=10)
    assert os.path.exists(socket_path)  # a SIGKILLed server removes nothing itself
    display.close()
    assert not os.path.exists(socket_path)
    assert not os.path.exists(f"/tmp/.X{display.number}-lock")


def test_a_socket_that_is_not_the_servers_own_is_left_alone(uid: Any, tmp_path: Any) -> None:
    display = XDisplay(width=320, height=240, uid=uid)
    socket_path = display.socket_path
    assert display._proc is not None
    os.killpg(display._proc.pid, signal.SIGKILL)
    display._proc.wait(timeout=10)
    os.unlink(socket_path)  # another server took the number over and made its own socket
    open(socket_path, "w").close()
    display.close()
    assert os.path.exists(socket_path)  # not the inode this server made: not ours to remove
    os.unlink(socket_path)


def test_a_link_put_in_the_sockets_place_is_not_followed(uid: Any, tmp_path: Any) -> None:
    # the app uid owns its server's socket: after the server dies it could swap in a link to a file of the host's
    display = XDisplay(width=320, height=240, uid=uid)
    socket_path = display.socket_path
    assert display._proc is not None
    os.killpg(display._proc.pid, signal.SIGKILL)
    display._proc.wait(timeout=10)
    host_file = tmp_path / "host_file"
    host_file.write_text("keep")
    os.unlink(socket_path)
    os.symlink(host_file, socket_path)
    display.close()
    assert host_file.read_text() == "keep" and os.path.islink(socket_path)
    os.unlink(socket_path)


def test_a_killed_spare_server_leaves_no_socket_behind(uid: Any) -> None:
    # restart() starts the next episode's server in the background; close() must clean up after it too
    display = XDisplay(width=320, height=240, uid=uid)
    before = set(os.listdir("/tmp/.X11-unix"))
    display.restart()
    assert display._spare is not None
    spare = display._spare
    ready, _, _ = select.select([spare.announce_fd], [], [], 20)  # it has announced its number (not read here)
    assert ready
    (name,) = set(os.listdir("/tmp/.X11-unix")) - before - {os.path.basename(display.socket_path)}
    socket_path = f"/tmp/.X11-unix/{name}"
    os.killpg(spare.proc.pid, signal.SIGKILL)
    spare.proc.wait(timeout=10)
    assert os.path.exists(socket_path)  # a SIGKILLed server removes nothing itself
    display.close()
    assert not os.path.exists(socket_path)


def _fake_xvfb(tmp_path: Any, monkeypatch: Any, script: str) -> None:
    """Put an ``Xvfb`` first on PATH that runs ``script`` (a server that fails in a known way)."""
    fake = tmp_path / "bin" / "Xvfb"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")


def test_a_server_that_exits_at_start_is_reported_with_its_status_and_stderr(tmp_path: Any, monkeypatch: Any) -> None:
    said = "_XSERVTransMakeAllCOTSServerListeners: server already running"
    _fake_xvfb(tmp_path, monkeypatch, f'echo "{said}" >&2\nexit 7\n')
    with pytest.raises(DisplayError, match=r"exited with status 7 .*its stderr: .*server already running"):
        XDisplay(width=320, height=240)


def test_a_server_that_never_announces_is_reported_as_slow(tmp_path: Any, monkeypatch: Any) -> None:
    _fake_xvfb(tmp_path, monkeypatch, 'echo "still loading fonts" >&2\nexec sleep 30\n')
    started = time.monotonic()
    with pytest.raises(DisplayError, match=r"did not announce its display within 0.5 s .*still loading fonts"):
        XDisplay(width=320, height=240, start_timeout_s=0.5)
    assert time.monotonic() - started < 10  # the silent server was stopped, not waited for


@pytest.mark.parametrize(("written", "number"), [(b"12\n", 12), (b"12", 12), (b"", None), (b"1x", None)])
def test_a_number_announced_without_its_newline_counts(written: bytes, number: int | None) -> None:
    """Xvfb writes the number, then the newline: a spare killed between the two writes left its socket behind."""
    from rlanything_core.envs.desktop.display import _announced

    read_fd, write_fd = os.pipe()
    os.write(write_fd, written)
    os.close(write_fd)
    assert _announced(read_fd) == number
