"""Bubblewrap detection and command construction."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

__all__ = ["bwrap_command", "bwrap_status"]


def bwrap_command(
    *, tmpfs_mb: int, hidden_paths: tuple[str, ...] = (), visible_paths: tuple[str, ...] = ()
) -> list[str]:
    """The bubblewrap prefix: new ipc/pid/net/uts(/cgroup) namespaces, read-only ``/``, private ``/tmp``.

    As root, no user namespace is created (none is needed) and only CAP_SETUID/CAP_SETGID are kept so that the
    runner can start the tests as the unprivileged uid; as a non-root user a user namespace is required.

    Args:
        tmpfs_mb: size of the writable ``/tmp`` tmpfs, MiB.
        hidden_paths: existing host directories to cover with an empty tmpfs.
        visible_paths: host paths the sandboxed command must still reach (its runner, its interpreter); those under
            ``/tmp`` are bound again, read-only, over the private ``/tmp``, which would otherwise hide them.

    Returns:
        The argv prefix; append ``--`` handling is included, so append the command directly.
    """
    exe = shutil.which("bwrap") or "bwrap"
    cmd = [exe, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if os.getuid() == 0:
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user"]
    cmd += ["--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    cmd += ["--size", str(tmpfs_mb << 20), "--tmpfs", "/tmp"]
    for path in sorted({os.path.abspath(p) for p in visible_paths}):
        if path.startswith("/tmp/") and os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    for path in hidden_paths:
        if os.path.isdir(path):
            cmd += ["--tmpfs", os.path.abspath(path)]
    cmd += ["--chdir", "/tmp", "--"]
    return cmd


@functools.lru_cache(maxsize=8)
def bwrap_status(tmpfs_mb: int = 256) -> tuple[bool, str]:
    """Whether bubblewrap works here (probed once per process by running ``true`` inside it).

    Returns:
        ``(works, reason)``; ``reason`` explains a failure (missing binary, namespace error text).
    """
    if shutil.which("bwrap") is None:
        return False, "bwrap not found on PATH (Debian/Ubuntu: apt-get install -y bubblewrap)"
    true = shutil.which("true") or "/bin/true"
    try:
        proc = subprocess.run(bwrap_command(tmpfs_mb=tmpfs_mb) + [true], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap probe failed: {exc}"
    if proc.returncode != 0:
        return False, f"bwrap probe exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}"
    return True, ""
