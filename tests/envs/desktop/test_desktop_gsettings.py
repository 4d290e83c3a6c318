"""GSettings on the episode's keyfile: which task commands load, the default a check must not already pass, and a
setting round trip through the command sandbox as the episode's uid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.config_steps import vm_only_word
from rlanything_core.envs.desktop.episode_fs import EpisodeFS, run_task_command
from rlanything_core.envs.desktop.gsettings import default_value, installed_schemas, missing_schema
from rlanything_core.envs.desktop.metrics import METRICS
from rlanything_core.sandbox.bwrap import bwrap_status

needs_gsettings = pytest.mark.skipif(
    shutil.which("gsettings") is None or "org.gnome.desktop.session" not in installed_schemas(),
    reason="needs gsettings and gsettings-desktop-schemas (apt-get install libglib2.0-bin gsettings-desktop-schemas)",
)


@needs_gsettings
def test_installed_schemas_pass_and_missing_ones_are_named() -> None:
    assert missing_schema("gsettings get org.gnome.desktop.session idle-delay") is None
    assert missing_schema(["gsettings", "set", "org.gnome.desktop.notifications", "show-banners", "false"]) is None
    assert missing_schema("echo hi") is None
    assert missing_schema("gsettings get org.gnome.shell favorite-apps") == "org.gnome.shell"
    assert missing_schema("x=1; /usr/bin/gsettings set org.gnome.shell favorite-apps []") == "org.gnome.shell"
    assert missing_schema("gsettings --schemadir /opt/s get a.b c") == "gsettings"  # a VM folder: unreadable here
    assert missing_schema("gsettings") == "gsettings"
    assert vm_only_word("gsettings get org.gnome.shell favorite-apps") == "gsettings schema org.gnome.shell"
    assert vm_only_word("gsettings get org.gnome.desktop.session idle-delay") is None
    assert vm_only_word("sudo gsettings get org.gnome.desktop.session idle-delay") == "sudo"


@needs_gsettings
def test_default_value_reads_the_schema_default_of_a_single_get() -> None:
    assert default_value("gsettings get org.gnome.desktop.screensaver lock-enabled") == "true\n"
    assert default_value(["gsettings", "get", "org.gnome.desktop.session", "idle-delay"]) == "uint32 300\n"
    assert default_value("gsettings get org.gnome.shell favorite-apps") is None  # not installed
    assert default_value("gsettings get org.gnome.desktop.session idle-delay; rm -rf ~") is None  # not one get
    assert default_value("gsettings get org.gnome.desktop.session no-such-key") is None


@needs_gsettings
@pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap does not work here")
def test_a_setting_persists_in_the_episode_keyfile_only(tmp_path: Path) -> None:
    one, two = EpisodeFS(tmp_path / "one"), EpisodeFS(tmp_path / "two")
    get = "gsettings get org.gnome.desktop.session idle-delay"
    assert run_task_command("gsettings set org.gnome.desktop.session idle-delay 0", shell=True, fs=one).returncode == 0
    assert run_task_command(get, shell=True, fs=one).stdout == "uint32 0\n"
    assert "idle-delay=" in (one.home / ".config/glib-2.0/settings/keyfile").read_text()
    assert run_task_command(get, shell=True, fs=two).stdout == "uint32 300\n"  # another episode: the default


@pytest.mark.parametrize(
    ("printed", "score"),
    [("1.25\n", 1.0), ("3.0", 1.0), ("1.0\n", 0.0), ("0.75\n", 0.0), ("", 0.0), ("inf\n", 0.0), ("nan", 0.0),
     ("big\n", 0.0), (None, 0.0)],
)
def test_check_text_enlarged(printed: str | None, score: float) -> None:
    """The printed factor is the agent's doing: anything but a finite number above 1.0 scores 0, never an error."""
    assert METRICS["check_text_enlarged"](printed) == score
