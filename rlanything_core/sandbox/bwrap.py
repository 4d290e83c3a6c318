"""Bubblewrap detection and command construction (an allow-list of what the sandbox can see).

The sandbox's root is an empty tmpfs; only these host paths appear in it, read-only: ``/usr`` and the top-level
``/bin``, ``/sbin``, ``/lib*`` (as the symlinks or directories they are on the host), a few files of ``/etc`` that
the dynamic loader and the C library read, the interpreter's installation prefix when it lies outside ``/usr``, and
the ``binds`` the caller adds. ``/tmp`` is a private size-limited tmpfs, ``/dev`` and ``/proc`` are fresh; ``/run``,
``/var``, ``/home``, ``/root``, ``/work``, data and run directories simply do not exist inside. Network, IPC, UTS,
PID (and cgroup) namespaces are new, so no host socket, abstract or not, is reachable unless bound on purpose.

Another sandboxed tool can reuse the builder, for example to run GUI automation with only an X display socket
reachable: ``bwrap_command(tmpfs_mb=64, binds=("/tmp/.X11-unix/X99",), pythons=("/usr/bin/python3",)) + [argv...]``
(a UNIX socket on a read-only bind is still connectable); or ``SandboxConfig(binds=(...))`` for the code sandbox.
As root the prefix keeps CAP_SETUID/CAP_SETGID and starts the command as root, to drop to an unprivileged uid inside
as the code sandbox's runner does; to start the command unprivileged instead, build with ``as_root=False`` and run it
as that uid (``subprocess.Popen(cmd, user=uid, group=uid, extra_groups=[])``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["ETC_FILES", "bwrap_command", "bwrap_status"]

ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
)
"""The only ``/etc`` entries visible inside (loader cache, time zone, user and group names)."""

_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr")


def _python_prefix(python: str | None) -> str | None:
    """The installation prefix of ``python`` (``<prefix>/bin/python3``) when it is outside ``/usr``."""
    if python is None:
        return None
    real = os.path.realpath(python)
    prefix = os.path.dirname(os.path.dirname(real))
    if prefix == "/usr" or prefix.startswith("/usr/") or prefix in ("", "/"):
        return None
    return prefix


def _bind_extra_paths(paths: list[str], bound: list[str]) -> list[str]:
    """``--ro-bind`` arguments for each existing path of ``paths``, preceded by traversable parents where needed.

    Args:
        paths: absolute host paths, sorted (a parent before its children).
        bound: what is mounted already (``/usr``, ``/tmp``, then the interpreter prefixes); each bound path is
            appended to it, so that the caller can hide paths under it.
    """
    args: list[str] = []
    made: set[str] = set()
    for path in paths:
        if not os.path.lexists(path):
            continue
        # bubblewrap would create the missing parents as 0700 root, which the unprivileged uid cannot traverse
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p in made or p in ("/", "/tmp") or any(p == b or p.startswith(b + "/") for b in bound[2:]):
                continue
            if p not in ("/usr",) and not p.startswith("/usr/"):
                args += ["--perms", "0755", "--dir", p]
                made.add(p)
        args += ["--ro-bind", path, path]
        bound.append(path)
    return args


def bwrap_command(
    *,
    tmpfs_mb: int,
    hidden_paths: tuple[str, ...] = (),
    visible_paths: tuple[str, ...] = (),
    binds: tuple[str, ...] = (),
    pythons: tuple[str, ...] = (),
    as_root: bool | None = None,
    tmp_dir: str | None = None,
) -> list[str]:
    """The bubblewrap argv prefix (append the command to run).

    As root no user namespace is created and only CAP_SETUID/CAP_SETGID are kept, so that the runner can start the
    tests as unprivileged uids; as a non-root user a user namespace is required and further ones are disabled.

    Args:
        tmpfs_mb: size of the writable ``/tmp`` tmpfs, MiB.
        hidden_paths: paths covered by an empty tmpfs (only matters for a path under a visible one).
        visible_paths: kept for compatibility, same as ``binds``.
        binds: extra host paths (files, directories or UNIX sockets) made visible read-only at the same path,
            after ``/tmp`` is mounted (so a socket under ``/tmp`` can be bound). Missing paths are skipped.
        pythons: the interpreters that will run inside; a prefix outside ``/usr`` is bound.
        as_root: whether bubblewrap itself will run as root (None: whether this process is root). False gives a
            user namespace with further ones disabled.
        tmp_dir: a host folder bound writable at ``/tmp`` instead of the tmpfs (several sandboxes of one GUI
            episode share it: LibreOffice's second start finds the first one's pipe there); ``tmpfs_mb`` then
            does not apply.

    Returns:
        The argv prefix, ending with ``--``.
    """
    exe = shutil.which("bwrap") or "bwrap"
    cmd = [exe, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if (os.getuid() == 0) if as_root is None else as_root:
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--disable-userns"]
    cmd += ["--die-with-parent"]
    for path in _TOP_LEVEL:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    # bubblewrap would create /etc as 0700 root for the files below, which the unprivileged uid cannot traverse
    cmd += ["--perms", "0755", "--dir", "/etc"]
    for path in ETC_FILES:
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    prefixes = sorted({p for p in map(_python_prefix, pythons) if p is not None and os.path.isdir(p)})
    for prefix in prefixes:
        cmd += ["--ro-bind", prefix, prefix]
    cmd += ["--dev", "/dev", "--proc", "/proc"]
    if tmp_dir is None:
        cmd += ["--size", str(tmpfs_mb << 20), "--tmpfs", "/tmp"]
    else:
        cmd += ["--bind", os.path.abspath(tmp_dir), "/tmp"]
    bound = ["/usr", "/tmp", *prefixes]
    cmd += _bind_extra_paths(sorted({os.path.abspath(p) for p in (*visible_paths, *binds)}), bound)
    for path in map(os.path.abspath, hidden_paths):
        if os.path.isdir(path) and any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound):
            cmd += ["--tmpfs", path]
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
    true = "/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true"
    try:
        proc = subprocess.run(bwrap_command(tmpfs_mb=tmpfs_mb) + [true], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap probe failed: {exc}"
    if proc.returncode != 0:
        return False, f"bwrap probe exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}"
    return True, ""
