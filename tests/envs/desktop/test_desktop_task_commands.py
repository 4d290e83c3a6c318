"""A task's own shell commands (set-up ``execute``, getter ``vm_command_line``) and the episode's VM ``/tmp``.

OSWorld's set-up scripts create ``/tmp/...`` trees that the agent works on and the check reads again (e.g. task
37887e8c); the command sandbox binds the episode's VM ``/tmp`` (the one its apps see), never the host's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.episode_fs import EpisodeFS, run_task_command
from rlanything_core.sandbox.bwrap import bwrap_status

pytestmark = pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap does not work here")


def test_set_up_and_check_share_the_episodes_tmp_and_not_the_hosts(tmp_path: Path) -> None:
    fs = EpisodeFS(tmp_path / "episode")
    marker = Path("/tmp") / f"rlanything-task-command-{os.getpid()}"
    marker.write_text("host\n")
    try:
        setup = run_task_command("mkdir -p /tmp/test_files && echo old > /tmp/test_files/a.txt", shell=True, fs=fs)
        assert setup.returncode == 0, setup.stderr
        assert (fs.local("/tmp/test_files/a.txt")).read_text() == "old\n"  # where the loader maps /tmp/... to
        check = run_task_command(f"cat /tmp/test_files/a.txt; cat {marker}", shell=True, fs=fs)
    finally:
        marker.unlink()
    assert check.stdout == "old\n" and "No such file" in check.stderr, (check.stdout, check.stderr)
    assert not Path("/tmp/test_files/a.txt").exists()


def test_another_episodes_tmp_is_not_seen(tmp_path: Path) -> None:
    first, second = EpisodeFS(tmp_path / "one"), EpisodeFS(tmp_path / "two")
    assert run_task_command("echo mine > /tmp/f", shell=True, fs=first).returncode == 0
    seen = run_task_command("cat /tmp/f", shell=True, fs=second)
    assert seen.returncode != 0 and seen.stdout == ""
