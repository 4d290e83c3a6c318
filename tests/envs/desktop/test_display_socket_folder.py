"""The X servers' socket folder: made sticky and writable by all whatever the umask, a bad one refused.

``os.makedirs(..., mode=0o1777)`` under the usual umask 022 made ``/tmp/.X11-unix`` 1755 on a machine that had none,
and every unprivileged Xvfb then died at start ("Mode of /tmp/.X11-unix should be set to 1777")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.display import DisplayError, socket_folder

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the folder is root's: the host side runs as root")


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_missing_folder_is_made_1777_under_the_usual_umask_and_a_1755_one_is_repaired(tmp_path: Path) -> None:
    folder = tmp_path / ".X11-unix"
    old = os.umask(0o022)
    try:
        socket_folder(str(folder))
    finally:
        os.umask(old)
    assert _mode(folder) == 0o1777 and os.lstat(folder).st_uid == 0
    folder.chmod(0o1755)  # what the umask left before
    socket_folder(str(folder))
    assert _mode(folder) == 0o1777


def test_a_link_a_file_or_another_users_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(DisplayError, match="not a folder owned by root"):
        socket_folder(str(link))
    assert _mode(target) == 0o755  # nothing was changed through the link
    (tmp_path / "file").write_text("")
    with pytest.raises(DisplayError, match="not a folder owned by root"):
        socket_folder(str(tmp_path / "file"))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(DisplayError, match="uid 65534"):
        socket_folder(str(theirs))
