"""The one launcher for every GUI application a desktop episode starts (LibreOffice now, any app later).

Each application runs inside bubblewrap (the coding sandbox's allow-list, :func:`~rlanything_core.sandbox.bwrap.
bwrap_command`): new pid, network, IPC and UTS namespaces; a root file system that holds only ``/usr`` (and the
top-level ``/lib*``, ``/bin`` links), a few ``/etc`` files the loader, fontconfig and the app read, the X display's
socket, and the episode's own folders bound writable at the paths an OSWorld VM has:

* ``/home/user``: the episode's home folder (the files the task downloads, the agent's work);
* ``/tmp``: a private folder of the episode (shared by the episode's app starts, so that a second ``soffice``
  hands its arguments to the running one through the pipe it finds there, and removed with the episode: nothing
  lands in the host's ``/tmp``);
* whatever the app needs besides (LibreOffice: its fresh profile at ``/profile``).

As root, bubblewrap keeps only CAP_SETUID/CAP_SETGID and ``setpriv`` drops to the episode's unprivileged uid before the
app starts (no capabilities, no supplementary groups, ``no_new_privs``). Every sandbox gets the coding sandbox's seccomp
filter (:func:`~rlanything_core.sandbox._procs.seccomp_filter`: no new user namespace, so ``unshare -Ur`` fails inside).
The home folder is given to the app uid only while no agent acts (:meth:`AppSandbox.hand_over`, walking by directory
descriptors without following links; :meth:`AppSandbox.seal` ends it before the agent's first action): a walk by path
while the agent runs would follow a folder it swapped for a link. :meth:`AppSandbox.close` kills every sandbox of the
episode: killing a namespace's init ends every process inside it, ``setsid`` daemons included, and each descendant is
also killed by pid, then waited for.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from rlanything_core.envs.desktop.display import XDisplay
from rlanything_core.sandbox._procs import seccomp_filter
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status

__all__ = ["APP_HOME", "APP_READ_ONLY", "AppSandbox", "descendants", "give_tree", "sandbox_fds"]

APP_HOME = "/home/user"
"""Where the episode's home folder appears inside (OSWorld's VM user)."""

APP_READ_ONLY = ("/etc/fonts", "/etc/libreoffice", "/var/cache/fontconfig", "/etc/alternatives")
"""Host paths GUI apps read besides ``/usr`` (fontconfig's configuration and cache, LibreOffice's registry, Debian's
command links); read-only, skipped when missing."""

_SETPRIV = "/usr/bin/setpriv"


def _parents() -> dict[int, list[int]]:
    """Children of every process (``/proc/<pid>/stat``'s ppid)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the command name may hold spaces and parentheses
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(roots: Iterable[int]) -> list[int]:
    """Live pids of ``roots`` and every process below them.

    Children re-parented inside a pid namespace stay below its init, so a ``setsid`` daemon of a sandbox is found.
    """
    kids = _parents()
    found: list[int] = []
    todo = [r for r in roots if os.path.exists(f"/proc/{r}")]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        todo.extend(kids.get(pid, []))
    return found


def give_tree(top: str | Path, uid: int) -> None:
    """``chown`` ``top`` and everything below it to ``uid`` without following a link, whatever changes meanwhile.

    Directory by directory through descriptors (:func:`os.fwalk` opens each folder with ``O_NOFOLLOW`` relative to
    its parent's descriptor and checks it is the folder it listed), each entry changed relative to its folder's
    descriptor with ``AT_SYMLINK_NOFOLLOW``: a folder swapped for a link is never entered and a link is changed
    itself. An entry that vanished meanwhile is skipped.
    """
    try:
        os.chown(top, uid, uid, follow_symlinks=False)
    except FileNotFoundError:
        return
    for _folder, dirs, files, fd in os.fwalk(top, follow_symlinks=False):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)


@contextlib.contextmanager
def sandbox_fds(files: Mapping[str, bytes] | None = None) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """Bubblewrap arguments and the descriptors they name: the seccomp filter and ``files`` (path inside -> bytes).

    Each comes from an anonymous memory file (nothing on disk); pass the descriptors to the child
    (``pass_fds``); they are closed when the block ends.
    """
    fds: list[int] = []
    args: list[str] = []
    try:
        code = seccomp_filter()
        if code is not None:
            fds.append(_memfd("rla-seccomp", code))
            args += ["--seccomp", str(fds[-1])]
        for inside, data in (files or {}).items():
            for parent in reversed(Path(inside).parents[:-1]):  # bubblewrap would make them 0700 root
                args += ["--perms", "0755", "--dir", str(parent)]
            fds.append(_memfd("rla-file", data))
            args += ["--perms", "0644", "--ro-bind-data", str(fds[-1]), inside]
        yield args, tuple(fds)
    finally:
        for fd in fds:
            os.close(fd)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # no MFD_CLOEXEC: the child inherits it through pass_fds
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class AppSandbox:
    """The GUI applications of one episode, each started in its own bubblewrap sandbox.

    Args:
        display: the X display the apps draw on (its socket is the one host socket inside).
        home: the host folder bound writable at ``/home/user``.
        tmp_dir: the host folder bound writable at ``/tmp`` (created; emptied by :meth:`close`).
        uid: the unprivileged uid the apps run as when this process is root (``None``: as the caller, in a user
            namespace when not root).
        rw_binds: more ``(host path, path inside)`` folders bound writable.
        hidden_paths: host folders covered by an empty tmpfs when they lie under a visible one (the package's task
            files when the package is installed under ``/usr``).

    Raises:
        RuntimeError: bubblewrap does not work here (an app outside a sandbox is not an option).
    """

    def __init__(
        self,
        display: XDisplay,
        *,
        home: str | Path,
        tmp_dir: str | Path,
        uid: int | None,
        rw_binds: tuple[tuple[str, str], ...] = (),
        hidden_paths: tuple[str, ...] = (),
    ) -> None:
        works, reason = bwrap_status()
        if not works:
            raise RuntimeError(f"GUI apps run only inside bubblewrap, which does not work here: {reason}")
        if uid is not None and (uid <= 0 or os.getuid() != 0):
            raise ValueError(f"uid must be an unprivileged uid (> 0) and needs root to switch to, got {uid!r}")
        if not os.path.exists(_SETPRIV) and uid is not None:
            raise RuntimeError(f"{_SETPRIV} (util-linux) is needed to start apps as uid {uid}")
        self.display = display
        self.home = Path(home).resolve()
        self.tmp_dir = Path(tmp_dir).resolve()
        self.uid = uid
        self.rw_binds = rw_binds
        self.hidden_paths = hidden_paths
        self._procs: list[subprocess.Popen[bytes]] = []
        self.sealed = False  # True from the agent's first action until close(): no more hand-over

    def command(self, argv: list[str], *, extra: tuple[str, ...] = ()) -> list[str]:
        """The whole argv that runs ``argv`` (a program under ``/usr``) in a fresh sandbox of this episode.

        ``extra``: more bubblewrap options (:func:`sandbox_fds`'s), placed before the command.
        """
        if not argv:
            raise ValueError("an app command needs at least the program")
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        if self.uid is not None:
            os.chown(self.tmp_dir, self.uid, self.uid)
        binds = (*APP_READ_ONLY, self.display.socket_path)
        prefix = bwrap_command(
            tmpfs_mb=0, binds=binds, hidden_paths=self.hidden_paths, tmp_dir=str(self.tmp_dir)
        )[:-1]
        prefix += ["--new-session", "--perms", "0755", "--dir", "/home", "--bind", str(self.home), APP_HOME]
        for source, target in self.rw_binds:
            prefix += ["--bind", str(Path(source).resolve()), target]
        prefix += [*extra, "--chdir", APP_HOME, "--"]
        if self.uid is not None:
            prefix += [_SETPRIV, f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--"]
        return prefix + list(argv)

    def hand_over(self) -> None:
        """Give the home folder and ``/tmp`` (and what the host put there) to the app's uid, so that the app can save.

        Runs only before :meth:`seal` (the episode's set-up, when no agent process exists): :func:`give_tree` walks
        by descriptors and never follows a link, and a vanished entry is no error.
        """
        if self.uid is None or self.sealed:
            return
        for top in (self.home, self.tmp_dir):
            give_tree(top, self.uid)

    def seal(self) -> None:
        """Hand the folders over one last time; from now until :meth:`close` nothing is chowned (the agent acts)."""
        self.hand_over()
        self.sealed = True

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """What an app's environment holds: the display, the VM's home and a private ``/tmp``."""
        env = {"DISPLAY": self.display.name, "HOME": APP_HOME, "USER": "user", "PATH": "/usr/bin:/bin"}
        env.update({"LANG": "C.UTF-8", "TMPDIR": "/tmp", **(extra or {})})
        return env

    def launch(
        self, argv: list[str], *, env: Mapping[str, str] | None = None, files: Mapping[str, bytes] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in a new sandbox of this episode; it is killed by :meth:`close` with all it started.

        ``files``: read-only files laid into the sandbox from memory (path inside -> content).
        """
        self.hand_over()
        with sandbox_fds(files) as (extra, fds):
            proc = subprocess.Popen(
                self.command(argv, extra=tuple(extra)),
                env=self.environment(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=fds,
            )
        self._procs.append(proc)
        return proc

    def stop(self, argv_tail: list[str], *, timeout_s: float = 10.0) -> int:
        """Kill (SIGKILL) every live sandbox launched with a command ending in ``argv_tail``, with all it started.

        The other sandboxes run on (the evaluator stops the agent's terminals, then saves the documents the apps
        hold open). Returns how many sandboxes were stopped.
        """
        stopped = 0
        for proc in self._procs:
            args = proc.args if isinstance(proc.args, list) else []  # launch() passes a list
            if proc.poll() is None and args[-len(argv_tail) :] == argv_tail:
                for pid in descendants([proc.pid]):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                proc.wait(timeout=timeout_s)
                stopped += 1
        return stopped

    def pids(self) -> list[int]:
        """Every live process of this episode's sandboxes (bubblewrap and all below it)."""
        return descendants(p.pid for p in self._procs if p.returncode is None)

    def close(self, *, timeout_s: float = 5.0, clear_tmp: bool = True) -> None:
        """Kill everything the episode's apps started (SIGKILL) and, with ``clear_tmp``, empty the episode's ``/tmp``.

        ``clear_tmp=False`` keeps ``/tmp`` for a check that reads a result the task saved there (OSWorld tasks may);
        the owner empties it later (the desktop environment's next reset or close removes the episode folder).

        Raises:
            RuntimeError: a process of the sandboxes survived ``timeout_s`` (it is named).
        """
        deadline = time.monotonic() + timeout_s
        # every process ever seen below the sandboxes, by (pid, start time): a namespace's members die a moment
        # after its init, re-parented out of the tree, and a pid reused meanwhile by another program is not ours
        seen: dict[int, str] = {}
        while True:
            for pid in self.pids():
                seen.setdefault(pid, _start_time(pid))
            alive = [p for p, started in seen.items() if _start_time(p) == started and not _zombie(p)]
            if not alive:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"app processes {alive} survived SIGKILL for {timeout_s:.0f}s")
            for proc in self._procs:
                if proc.returncode is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for proc in self._procs:
                try:
                    proc.wait(timeout=0.02)
                except subprocess.TimeoutExpired:
                    pass
        for proc in self._procs:
            proc.wait(timeout=timeout_s)
        self._procs.clear()
        self.sealed = False  # no app of the episode runs now
        if clear_tmp:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)


def _start_time(pid: int) -> str:
    """``pid``'s start time (``/proc/<pid>/stat`` field 22); ``""`` when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
