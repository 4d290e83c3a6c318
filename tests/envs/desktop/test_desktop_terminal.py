"""The terminal OSWorld's OS tasks activate: xterm in the episode's app sandbox, typed into as an agent types.

Hostile: what a policy types into the terminal runs as the app uid and sees what the apps see (``/usr``,
``/home/user`` = the episode home, the episode's ``/tmp``), not the repository, the task's private files or the
host's ``/tmp``; closing the episode ends the shell.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from _desktop_apps import running

from rlanything_core.envs.desktop.app_sandbox import APP_HOME, AppSandbox
from rlanything_core.envs.desktop.config_steps import StepContext, check_step, run_step
from rlanything_core.envs.desktop.episode_fs import EpisodeFS, run_task_command
from rlanything_core.envs.desktop.office import OfficeApp, find_windows
from rlanything_core.envs.desktop.terminal import TERMINAL_TITLE, TerminalKey, is_terminal, terminal_argv
from rlanything_core.sandbox.bwrap import bwrap_status

needs_gui = pytest.mark.skipif(
    not bwrap_status()[0] or shutil.which("xterm") is None, reason="needs bubblewrap and xterm (apt-get install xterm)"
)
ACTIVATE = {"type": "activate_window", "parameters": {"window_name": "Terminal"}}


def test_the_terminal_names() -> None:
    assert is_terminal("Terminal") and is_terminal(" terminal ") and not is_terminal("Terminal - LibreOffice")
    argv = terminal_argv()
    assert argv[0] == "xterm" and argv[argv.index("-T") + 1] == TERMINAL_TITLE
    assert "*allowTitleOps: false" in argv  # the shell cannot retitle the window out of reach of activate_window


def test_activating_the_terminal_is_a_supported_step(tmp_path: Path) -> None:
    class Refused(Exception):
        pass

    check_step(ACTIVATE, "config[1]", None, Refused)  # type: ignore[arg-type]
    with pytest.raises(Refused, match="window_name"):
        check_step({"type": "activate_window", "parameters": {}}, "config[1]", None, Refused)  # type: ignore[arg-type]


def _wait_for(path: Path, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written")


@needs_gui
def test_the_terminal_runs_typed_commands_inside_the_app_sandbox(display, uid: int | None, tmp_path: Path) -> None:
    fs = EpisodeFS(tmp_path / "episode", owner=uid)
    secret = tmp_path / "private"
    secret.mkdir()
    (secret / "gold.txt").write_text("the expected answer\n")
    host_tmp_marker = Path("/tmp") / f"rlanything-terminal-test-{os.getpid()}"
    host_tmp_marker.write_text("host\n")
    profile = tmp_path / "profile"
    apps = AppSandbox(
        display,
        home=fs.home,
        tmp_dir=fs.root / "tmp",
        uid=uid,
        rw_binds=(OfficeApp.profile_bind(profile),),
        hidden_paths=(str(secret), str(Path.cwd())),
    )
    office = OfficeApp(display, profile, apps, window_timeout_s=20.0, ready_s=0.3)
    ctx = StepContext(fs, office, None, tmp_path, (display.width, display.height))
    script = (
        f"(id -u; echo $HOME $PWD; echo $(ls /); cat {secret}/gold.txt; ls {Path.cwd()} | head -1;"
        f" cat {host_tmp_marker}; touch /tmp/from-terminal; gsettings set org.gnome.desktop.session idle-delay 0)"
        " > seen.tmp 2>&1; mv seen.tmp seen.txt\n"
    )
    try:
        note = run_step(ACTIVATE, ctx)
        assert note.startswith("opened"), note
        assert find_windows(display, TERMINAL_TITLE, strict=True)
        assert run_step(ACTIVATE, ctx).startswith("activated")  # a second activation finds the open one
        subprocess.run(["xdotool", "type", "--delay", "5", script], env=display.env(), check=True, timeout=60)
        seen = _wait_for(fs.home / "seen.txt").splitlines()
        shells = [p for p in apps.pids() if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"/bin/bash")]
        assert shells
    finally:
        apps.close(clear_tmp=False)
        host_tmp_marker.unlink()
    assert seen[0] == str(uid if uid is not None else os.getuid())
    assert seen[1] == f"{APP_HOME} {APP_HOME}"
    assert set(seen[2].split()) <= {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc",
                                    "profile", "sbin", "tmp", "usr", "var"}, seen[2]
    assert "No such file" in seen[3] and "No such file" in seen[4] and "No such file" in seen[5], seen[3:]
    assert (fs.root / "tmp" / "from-terminal").is_file()  # the episode's /tmp, not the host's
    assert not Path("/tmp/from-terminal").exists()
    assert not any(running(p) for p in shells)
    # the setting the agent made in the terminal is the one a task's check reads (the episode's keyfile)
    check = run_task_command("gsettings get org.gnome.desktop.session idle-delay", shell=True, fs=fs)
    assert check.stdout == "uint32 0\n", (check.stdout, check.stderr)


def _pressed_within(key: TerminalKey, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if key.pressed():
            return True
        time.sleep(0.05)
    return False


@needs_gui
def test_ctrl_alt_t_is_caught_and_other_keys_are_not(display) -> None:
    key = TerminalKey(display)
    try:
        assert not key.pressed()
        for other in ("ctrl+t", "alt+t", "t", "ctrl+alt+y"):
            subprocess.run(["xdotool", "key", other], env=display.env(), check=True, timeout=10)
        assert not _pressed_within(key, 1.0)
        subprocess.run(["xdotool", "key", "ctrl+alt+t"], env=display.env(), check=True, timeout=10)
        assert _pressed_within(key)
        assert not key.pressed()  # read once
    finally:
        key.close()


@needs_gui
@pytest.mark.slow
def test_an_agent_opens_the_terminal_with_ctrl_alt_t_and_changes_a_setting(desktop_env, tmp_path: Path) -> None:
    """End to end in the environment: OSWorld's "dim screen" check (bedcedc4's evaluator), solved by typing."""
    from rlanything_core.envs.desktop.cli import run_task

    task = tmp_path / "dim.json"
    task.write_text(json.dumps({
        "id": "dim-screen-off",
        "instruction": "Set 'Dim screen when inactive' to off.",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": ["gsettings", "get", "org.gnome.desktop.session",
                                                             "idle-delay"]},
            "expected": {"type": "rule", "rules": {"expected": "uint32 0\n"}},
        },
    }))
    untouched = run_task(task, ["DONE"], env=desktop_env)
    assert untouched["score"] == 0.0, untouched
    typed = "gsettings set org.gnome.desktop.session idle-delay 0\n"
    actions = ["pyautogui.hotkey('ctrl', 'alt', 't')", f"pyautogui.write({typed!r}, interval=0.01)", "WAIT", "DONE"]
    solved = run_task(task, actions, env=desktop_env)
    assert (solved["score"], solved["error"]) == (1.0, ""), solved


@needs_gui
def test_a_dead_display_is_no_error_for_the_key(tmp_path: Path) -> None:
    """The environment ends an episode whose display died; reading or closing the key must not raise first."""
    import signal

    from rlanything_core.envs.desktop.display import XDisplay

    d = XDisplay()
    key = TerminalKey(d)
    os.killpg(d._proc.pid, signal.SIGKILL)
    d._proc.wait(timeout=10)
    try:
        assert key.pressed() is False and key.pressed() is False
        key.close()
    finally:
        d.close()
