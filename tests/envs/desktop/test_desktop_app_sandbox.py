"""The generic app launcher without LibreOffice: what an app sees, who it runs as, and that close() ends it all."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _desktop_apps import running

from rlanything_core.envs.desktop.app_sandbox import APP_HOME, AppSandbox, descendants
from rlanything_core.sandbox.bwrap import bwrap_status

pytestmark = pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap does not work here")


def _wait_for(path: Path, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written")


def test_an_app_sees_home_tmp_and_usr_only(display, uid: int | None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "given.txt").write_text("from the task\n")
    apps = AppSandbox(display, home=home, tmp_dir=tmp_path / "apptmp", uid=uid, hidden_paths=(str(Path.cwd()),))
    script = (
        "id -u > $HOME/seen.tmp; cat /home/user/given.txt >> $HOME/seen.tmp; echo $(ls /) >> $HOME/seen.tmp; "
        f"ls {Path.cwd()} 2>&1 | head -1 >> $HOME/seen.tmp; echo \"$DISPLAY $PWD\" >> $HOME/seen.tmp; "
        "touch /tmp/inside; mv $HOME/seen.tmp $HOME/seen.txt"
    )
    try:
        apps.launch(["/bin/sh", "-c", script])
        seen = _wait_for(home / "seen.txt").splitlines()
    finally:
        apps.close()
    assert seen[0] == str(uid if uid is not None else os.getuid())
    assert seen[1] == "from the task"
    assert set(seen[2].split()) <= {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc", "sbin",
                                    "tmp", "usr", "var"}, seen[2]
    assert "No such file" in seen[3]
    assert seen[4] == f"{display.name} {APP_HOME}"
    assert not (tmp_path / "apptmp").exists()  # the episode's /tmp went with close()
    if uid is not None:
        assert (home / "seen.txt").stat().st_uid == uid


def _sleepers() -> list[int]:
    """Host-wide: live ``sleep 3134x`` processes (the markers of the test below)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes().startswith(b"sleep\x003134"):
                found.append(int(entry))
        except OSError:
            continue
    return [p for p in found if running(p)]


def test_close_kills_setsid_daemons_and_forks(display, uid: int | None, tmp_path: Path) -> None:
    apps = AppSandbox(display, home=tmp_path, tmp_dir=tmp_path / "apptmp", uid=uid)
    daemons = "setsid sleep 31342 & (setsid sleep 31340 </dev/null >/dev/null 2>&1 &) ; sleep 31341"
    apps.launch(["/bin/sh", "-c", daemons])
    deadline = time.monotonic() + 20
    while len(_sleepers()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers()) == 3
    every = apps.pids()
    apps.close()
    assert not any(running(p) for p in every) and apps.pids() == []
    assert _sleepers() == []


def test_bad_arguments_are_refused(display, uid: int | None, tmp_path: Path) -> None:
    if os.getuid() == 0:
        with pytest.raises(ValueError, match="uid"):
            AppSandbox(display, home=tmp_path, tmp_dir=tmp_path / "t", uid=0)
    apps = AppSandbox(display, home=tmp_path, tmp_dir=tmp_path / "t", uid=uid)
    with pytest.raises(ValueError, match="program"):
        apps.launch([])


def test_descendants_finds_the_whole_tree() -> None:
    assert descendants([os.getpid()])[0] == os.getpid()
    assert descendants([2**22 + 7]) == []  # no such process
