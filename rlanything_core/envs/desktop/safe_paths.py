"""File access under a folder the agent wrote, that never follows a link or opens a special file.

The trusted side (the environment, the check server: root when the apps run as an unprivileged uid) reads and writes
files in the episode's home and in LibreOffice's profile after the episode. A symbolic link there (at the file or at
any folder above it) would make it read or overwrite a host file; a FIFO would block it. Every path is therefore
walked one component at a time from ``root`` with ``O_NOFOLLOW`` (``openat``), and the file opened is checked to be
a regular file before a byte is read. A link or a special file is refused with :class:`UnsafePath` (an ``OSError``,
so a getter reports it as an unreadable result and the check scores 0).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

__all__ = ["UnsafePath", "copy_in", "copy_out", "open_regular"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path under the folder is a link or a special file, or leaves the folder."""


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    parts = [p for p in PurePosixPath(os.fspath(rel)).parts if p not in ("", "/", ".")]
    if not parts or ".." in parts:
        raise UnsafePath(errno.EINVAL, f"not a path inside the folder: {os.fspath(rel)!r}")
    return parts


def _open_dir(root: Path, parts: list[str], *, create: bool, owner: int | None) -> int:
    """A descriptor of ``root/parts...`` (each component a real folder; missing ones made when ``create``)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                if owner is not None:
                    os.chown(name, owner, owner, dir_fd=fd, follow_symlinks=False)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(exc.errno, f"{name!r} under {root} is a link or not a folder") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(root: str | Path, rel: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file ``root/rel``, reached without following any link.

    Raises:
        FileNotFoundError: a component is missing.
        UnsafePath: a component is a link, or the file is not a regular file (a FIFO is never opened for reading:
            ``O_NONBLOCK`` first, then the type is checked).
    """
    parts = _parts(rel)
    folder = _open_dir(Path(root), parts[:-1], create=False, owner=None)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(exc.errno, f"{os.fspath(rel)!r} under {root} is a link") from None
            raise
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(errno.EINVAL, f"{os.fspath(rel)!r} under {root} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def copy_out(root: str | Path, rel: str | os.PathLike[str], target: str | Path) -> None:
    """Copy the regular file ``root/rel`` (:func:`open_regular`) to ``target``, a path of the trusted side."""
    fd = open_regular(root, rel)
    with os.fdopen(fd, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)


def copy_in(source: str | Path, root: str | Path, rel: str | os.PathLike[str], *, owner: int | None = None,
            mode: int = 0o644) -> None:
    """Write a fresh copy of the trusted file ``source`` at ``root/rel``, replacing whatever is there.

    Folders on the way are walked without following links (missing ones are made, owned by ``owner``); an entry
    already at the place (a file, a link, a FIFO, a folder) is removed, never opened, and the copy is created anew
    (``O_EXCL``), so no link the agent left can redirect the write.
    """
    parts = _parts(rel)
    folder = _open_dir(Path(root), parts[:-1], create=True, owner=owner)
    try:
        name = parts[-1]
        try:
            mode_there = os.lstat(name, dir_fd=folder).st_mode
        except FileNotFoundError:
            mode_there = None
        if mode_there is not None:
            if stat.S_ISDIR(mode_there):
                shutil.rmtree(os.path.join(f"/proc/self/fd/{folder}", name))
            else:
                os.unlink(name, dir_fd=folder)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        with os.fdopen(fd, "wb") as dst, open(source, "rb") as src:
            shutil.copyfileobj(src, dst)
            os.fchmod(dst.fileno(), mode)
            if owner is not None:
                os.fchown(dst.fileno(), owner, owner)
    finally:
        os.close(folder)
