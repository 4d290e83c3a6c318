"""The episode's folders on their own tmpfs (root only), so that the sandboxes' mount tables name no host path.

A bind mount shows, in ``/proc/self/mountinfo`` inside the sandbox, its source's path relative to the root of the
file system it lives on: ``/tmp/rla-desktop-x1y2/episode/home/user`` for a folder of the host's ``/tmp``, ``/home/user``
for the same folder on a tmpfs of its own. The tmpfs also bounds what an episode can write (its size).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

__all__ = ["mount_tmpfs", "unmount"]

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def mount_tmpfs(path: str | Path, *, size_bytes: int) -> None:
    """Mount an empty tmpfs of at most ``size_bytes`` (mode 0755, no setuid, no devices) on the folder ``path``.

    Raises:
        ValueError: ``size_bytes`` is not positive.
        OSError: the mount failed (not root, or no such folder).
    """
    if size_bytes <= 0:
        raise ValueError(f"size_bytes must be > 0, got {size_bytes}")
    target = os.fsencode(str(path))
    options = f"mode=0755,size={size_bytes}".encode()
    if _libc().mount(b"rla-episode", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {path}: {os.strerror(err)}")


def unmount(path: str | Path) -> None:
    """Detach the mount on ``path`` (lazily: a process still holding a file in it keeps only that file)."""
    if _libc().umount2(os.fsencode(str(path)), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {path}: {os.strerror(err)}")
