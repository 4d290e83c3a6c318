"""Where an OSWorld task's files come from: OSWorld's own download cache, and VM paths mapped to the episode folder.

OSWorld's ``DesktopEnv`` keeps one cache folder per task, ``<cache>/<task id>/`` (``desktop_env/desktop_env.py`` in
the OSWorld repository), and writes two kinds of files there
(``desktop_env/controllers/setup.py``, ``desktop_env/evaluators/getters/file.py``):

* a ``download`` set-up step's file as ``<cache>/<task id>/<uuid5(NAMESPACE_URL, url)>_<basename of the VM path>``;
* a ``cloud_file`` getter's file (the gold file of the evaluation) as ``<cache>/<task id>/<dest>``.

Both are keyed by the task id and a file name, so no two files of different tasks (or the input and the gold file of
one task, whose Google Drive URLs all end in ``uc`` or ``download``) collide. A cache filled by OSWorld itself can be
used here as it is; a missing file is a :class:`MissingTaskFile` naming the task, the URL and the expected path.

VM paths: the applications see the episode's home folder at ``/home/user`` and its temporary folder at ``/tmp``
(bind mounts of the application sandbox), so a VM path maps to the episode folder by :func:`vm_path_to_local`; a
path anywhere else is refused at load (:func:`check_vm_path`), since no application could see a file there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "MissingTaskFile",
    "TaskFiles",
    "VM_HOME",
    "VM_TMP",
    "check_vm_path",
    "cloud_cache_path",
    "download_cache_path",
    "episode_path",
    "vm_path_to_local",
]

VM_HOME = "/home/user"
VM_TMP = "/tmp"


class MissingTaskFile(FileNotFoundError):
    """A file a task needs is not where the cache keeps it (the message names the task, the URL and the path)."""


def download_cache_path(cache_dir: str | Path, task_id: str, url: str, vm_path: str) -> Path:
    """Where OSWorld's cache keeps the file a ``download`` step fetches from ``url`` to ``vm_path``.

    Examples:
        >>> download_cache_path("/c", "t1", "https://x/uc?id=1", "/home/user/a.xlsx").as_posix()
        '/c/t1/12ffc27d-f220-578d-8f32-667df95baa70_a.xlsx'
    """
    if not task_id or "/" in task_id or task_id in (".", ".."):
        raise ValueError(f"task_id must be a plain folder name, got {task_id!r}")
    return Path(cache_dir) / task_id / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(vm_path)}"


def cloud_cache_path(cache_dir: str | Path, task_id: str, dest: str) -> Path:
    """Where OSWorld's cache keeps a ``cloud_file`` getter's file saved as ``dest``."""
    if not task_id or "/" in task_id or task_id in (".", ".."):
        raise ValueError(f"task_id must be a plain folder name, got {task_id!r}")
    if not dest or os.path.basename(dest) != dest or dest in (".", ".."):
        raise ValueError(f"cloud_file dest must be a plain file name, got {dest!r}")
    return Path(cache_dir) / task_id / dest


def check_vm_path(vm_path: object) -> str:
    """The VM path, checked: under ``/home/user`` (or ``~``, or relative to it) or ``/tmp``; else ``ValueError``."""
    if not isinstance(vm_path, str) or not vm_path:
        raise ValueError(f"a VM path must be a non-empty string, got {vm_path!r}")
    path = VM_HOME + vm_path[1:] if vm_path.startswith("~") else vm_path
    if not path.startswith("/"):
        path = f"{VM_HOME}/{path}"
    normal = os.path.normpath(path)
    for root in (VM_HOME, VM_TMP):
        if normal == root or normal.startswith(root + "/"):
            return normal
    raise ValueError(f"VM path {vm_path!r} is outside {VM_HOME} and {VM_TMP}, the folders the applications see")


def vm_path_to_local(vm_path: str, *, home: str | Path, tmp: str | Path) -> Path:
    """The local path of a VM path: ``/home/user/x`` (``~/x``, ``x``) -> ``home/x``; ``/tmp/x`` -> ``tmp/x``.

    Raises:
        ValueError: the path leaves those two folders (``..`` included) or is not a string.

    Examples:
        >>> vm_path_to_local("/home/user/Desktop/a.xlsx", home="/ep/home", tmp="/ep/tmp").as_posix()
        '/ep/home/Desktop/a.xlsx'
        >>> vm_path_to_local("/tmp/x.csv", home="/ep/home", tmp="/ep/tmp").as_posix()
        '/ep/tmp/x.csv'
    """
    normal = check_vm_path(vm_path)
    if normal == VM_HOME or normal.startswith(VM_HOME + "/"):
        return Path(home) / normal[len(VM_HOME) :].lstrip("/")
    return Path(tmp) / normal[len(VM_TMP) :].lstrip("/")


def episode_path(fs: Any, vm_path: str) -> Path:
    """:func:`vm_path_to_local` for an episode folder (an ``EpisodeFS``: ``home`` and ``root / "tmp"``)."""
    return vm_path_to_local(vm_path, home=fs.home, tmp=Path(fs.root) / VM_TMP.lstrip("/"))


def _is_remote(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https", "ftp")


def _local_source(url: str, task_dir: Path) -> Path:
    parsed = urlparse(url)
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(url)
    return path if path.is_absolute() else task_dir / path


@dataclass(frozen=True)
class TaskFiles:
    """The files of one task: local paths and ``file://`` URLs as they are, remote URLs through the cache.

    Args:
        task_id: the task's ``id`` (its cache folder's name).
        task_dir: the folder of the task's JSON (relative paths resolve against it).
        cache_dir: the root of an OSWorld-layout cache (``None``: remote URLs resolve to files shipped beside the task
            under the URL's file name, the convention of the package's own tasks).
    """

    task_id: str
    task_dir: Path
    cache_dir: Path | None = None

    def download_source(self, url: str, vm_path: str) -> Path:
        """The local file a ``download`` step copies to ``vm_path``.

        Raises:
            MissingTaskFile: the file is absent (the message names the task, the URL and the expected path).
        """
        return self._source(
            url, "download source", "download url", lambda root: download_cache_path(root, self.task_id, url, vm_path)
        )

    def cloud_source(self, url: str, dest: str) -> Path:
        """The local file of a ``cloud_file`` getter saved as ``dest`` (see :meth:`download_source`)."""
        return self._source(
            url, "cloud_file", "cloud_file url", lambda root: cloud_cache_path(root, self.task_id, dest)
        )

    def _source(self, url: str, local: str, remote: str, cached: Callable[[Path], Path]) -> Path:
        """A local path or ``file://`` URL as it is, a remote URL at ``cached(cache root)`` or shipped with the task.

        ``local`` and ``remote`` name the file in the messages (a local source, a remote URL).
        """
        if not _is_remote(url):
            path = _local_source(url, self.task_dir)
            if not path.is_file():
                raise MissingTaskFile(f"task {self.task_id}: {local} {url!r} is not a file ({path})")
            return path
        if self.cache_dir is not None:
            path = cached(self.cache_dir)
            if not path.is_file():
                raise MissingTaskFile(
                    f"task {self.task_id}: {remote} {url!r} is not in the cache; expected it at {path}"
                )
            return path
        return self._shipped(url, remote)

    def _shipped(self, url: str, what: str) -> Path:
        name = unquote(Path(urlparse(url).path).name)
        for candidate in (self.task_dir / name, self.task_dir / "files" / name):
            if candidate.is_file():
                return candidate
        raise MissingTaskFile(
            f"task {self.task_id}: {what} {url!r} is neither shipped beside the task (as {name!r}) nor cached: "
            "no cache folder is set (give an OSWorld cache, e.g. setting.cache_dir)"
        )
