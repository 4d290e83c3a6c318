"""The episode's file system: OSWorld's VM paths mapped into one local folder, and task-shipped files found.

OSWorld tasks name files inside the VM (``/home/user/Desktop/report.xlsx``, ``~/data.csv``). Here every such path
lives under the episode's root folder (``<root>/home/user/Desktop/report.xlsx``); shell commands of a task run in a
sandbox where ``<root>/home/user`` is mounted at ``/home/user``, so both views agree.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

from rlanything_core.envs.desktop.app_sandbox import sandbox_fds
from rlanything_core.envs.desktop.gsettings import GSETTINGS_ENV
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status

__all__ = ["HOME", "EpisodeFS", "resolve_shipped_file", "run_task_command"]

HOME = "/home/user"


class EpisodeFS:
    """VM paths of one episode, under ``root``.

    Args:
        root: the episode's folder (created).
        owner: the unprivileged uid the episode's apps and task commands run as (``None``: the caller's).
    """

    def __init__(self, root: str | Path, *, owner: int | None = None) -> None:
        self.root = Path(root).resolve()
        self.owner = owner
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "Desktop").mkdir(exist_ok=True)
        self.cache = self.root / "cache"
        self.cache.mkdir(exist_ok=True)

    @property
    def home(self) -> Path:
        """The local folder standing for ``/home/user``."""
        return self.root / HOME.lstrip("/")

    def local(self, vm_path: str) -> Path:
        """The local path of a VM path (``~`` is ``/home/user``; a relative path is relative to it)."""
        if not isinstance(vm_path, str) or not vm_path:
            raise ValueError(f"a VM path must be a non-empty string, got {vm_path!r}")
        path = vm_path.replace("~", HOME, 1) if vm_path.startswith("~") else vm_path
        if not path.startswith("/"):
            path = f"{HOME}/{path}"
        normal = os.path.normpath(path)
        if normal.startswith(".."):
            raise ValueError(f"VM path escapes the file system: {vm_path!r}")
        return self.root / normal.lstrip("/")

    def reset(self) -> None:
        """Empty the episode folder (a new episode starts from nothing)."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.__init__(self.root, owner=self.owner)  # type: ignore[misc]

    def drop_links(self) -> list[str]:
        """Remove every symbolic link and special file (FIFO, socket, device) under the root; returns their paths.

        Run after the episode, before the checker reads the results as a trusted process: a link named like the
        result would make it copy a host file (a gold file), and a FIFO would block it.
        """
        dropped = []
        for folder, dirs, files in os.walk(self.root):
            for name in (*dirs, *files):
                path = os.path.join(folder, name)
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    os.unlink(path)
                    dropped.append(path)
        return dropped


def resolve_shipped_file(url: str, task_dir: Path) -> Path | None:
    """The local file for a download URL (``None`` when absent).

    ``file://`` or a path (relative to the task's folder); for an ``http(s)`` URL (no network here), a file of the
    same name shipped beside the task (or in its ``files/`` folder).
    """
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https"):
        name = unquote(Path(parsed.path).name)
        for candidate in (task_dir / name, task_dir / "files" / name):
            if candidate.is_file():
                return candidate
        return None
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(url)
    if not path.is_absolute():
        path = task_dir / path
    return path if path.is_file() else None


def run_task_command(
    command: str | list[str], *, shell: bool, fs: EpisodeFS, timeout_s: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run a task's own shell command (set-up ``execute``/``command``, getter ``vm_command_line``) in a sandbox.

    The command sees a read-only system, no network, ``/home/user`` = the episode's home folder and ``/tmp`` = the
    episode's VM ``/tmp`` (``root/tmp``, the one its apps see: in OSWorld's VM a set-up script's ``/tmp/...`` files
    are the ones the agent and the check find), both writable, and ``gsettings`` on the episode's keyfile
    (:data:`~.gsettings.GSETTINGS_ENV`). It runs as ``fs.owner`` (the episode's apps' uid)
    when set and the caller is root, else with all capabilities dropped. Without bubblewrap it runs with ``HOME`` set
    to the episode home and ``cwd`` there.
    """
    argv = ["/bin/sh", "-c", command if isinstance(command, str) else " ".join(command)] if shell else command
    if isinstance(argv, str):
        argv = argv.split()
    env = {"PATH": "/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8", **GSETTINGS_ENV}
    works, _ = bwrap_status()
    if works:
        vm_tmp = fs.root / "tmp"
        vm_tmp.mkdir(exist_ok=True)
        if fs.owner is not None and os.getuid() == 0:
            os.chown(vm_tmp, fs.owner, fs.owner)  # the folder only: what is in it is the episode's own already
        prefix = bwrap_command(tmpfs_mb=64, tmp_dir=str(vm_tmp))[:-1]
        prefix += ["--tmpfs", "/home", "--bind", str(fs.home), HOME, "--chdir", HOME]
        with sandbox_fds() as (seccomp, fds):  # the apps' seccomp filter: no new user namespace
            prefix += seccomp
            if fs.owner is not None and os.getuid() == 0:
                uid = str(fs.owner)
                prefix += ["--", "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
            else:
                prefix += ["--cap-drop", "ALL", "--"]
            return subprocess.run(
                [*prefix, *argv], env=env, capture_output=True, text=True, timeout=timeout_s, check=False, pass_fds=fds
            )
    # documented fallback: no isolation beyond the working folder
    env["HOME"], env["XDG_CONFIG_HOME"] = str(fs.home), str(fs.home / ".config")
    return subprocess.run(
        list(argv), env=env, cwd=str(fs.home), capture_output=True, text=True, timeout=timeout_s, check=False
    )
