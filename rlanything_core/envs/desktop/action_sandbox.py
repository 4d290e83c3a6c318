"""Run GUI actions in a separate, sandboxed process that can reach only one X display.

Model-written pyautogui code is untrusted code: it runs under bubblewrap (an allow-list file system, private
``/tmp``, no network, new pid/ipc/uts namespaces, as the episode's unprivileged uid when the library runs as root),
with the display's Unix socket as the one thing bound into its ``/tmp``. The argv is the coding sandbox's
:func:`~rlanything_core.sandbox.bwrap.bwrap_command` plus a private ``/rla`` folder holding the worker script and
only the directories of pyautogui and its dependencies (``/rla/site/<name>``), never the site directory itself:
the library's package (and the gold files of its shipped tasks) is not visible, however it is installed. Each action
runs in a child forked from the clean worker and everything it started is killed before it is answered
(``_action_worker.py``), so no state passes from one action to the next; a hung action is killed with its whole
process group after ``action_timeout_s``; the next action starts a fresh worker.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import select
import stat
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop._processes import stop_process_group
from rlanything_core.envs.desktop.actions import Action, ActionKind
from rlanything_core.envs.desktop.display import XDisplay
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status
from rlanything_core.sandbox.sandbox import resolve_python

__all__ = ["ActionResult", "ActionSandbox", "sandbox_argv"]

_WORKER = str(Path(__file__).with_name("_action_worker.py"))
_MODULES = ("pyautogui", "Xlib", "PIL", "pymsgbox", "pytweening", "pyscreeze", "pygetwindow", "pyrect")
_OPTIONAL = ("six",)  # python-xlib's dependency in the versions that still use it
_NOBODY = 65534
_INSIDE = "/rla"


@dataclass(frozen=True)
class ActionResult:
    """What the worker said about one action: ``ok`` and, when not, the error's last line."""

    ok: bool
    error: str = ""


def _site_dirs() -> list[str]:
    """The host paths the worker imports.

    Each module's own package folder (or file), plus the ``*.libs`` folders of bundled shared libraries beside them
    (Pillow's wheels link ``$ORIGIN/../pillow.libs``).
    """
    found: list[str] = []
    for name in (*_MODULES, *_OPTIONAL):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            if name in _OPTIONAL:
                continue
            raise RuntimeError(f"the desktop actions need the Python package {name!r} (pip install pyautogui)")
        origin = Path(spec.origin)
        path = origin.parent if origin.name == "__init__.py" else origin
        for item in (str(path), *sorted(glob.glob(str(path.parent / "*.libs")))):
            if item not in found:
                found.append(item)
    return found


def _same_python(python: str) -> bool:
    """Whether ``python`` is this interpreter's version (the site directories hold compiled extensions)."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return True
    try:
        out = subprocess.run(
            [python, "-I", "-S", "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=20, check=False,
        ).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out == [str(v) for v in sys.version_info[:2]]


def _world_readable(path: str) -> bool:
    """Whether a user with no owner/group rights can read ``path`` (every parent searchable)."""
    real = Path(os.path.realpath(path))
    try:
        return all(os.stat(d).st_mode & stat.S_IXOTH for d in real.parents) and bool(
            os.stat(real).st_mode & stat.S_IROTH
        )
    except OSError:
        return False


def sandbox_argv(
    display: XDisplay,
    *,
    hidden_paths: tuple[str, ...] = (),
    unprivileged: bool,
    python: str = sys.executable,
    site_dirs: tuple[str, ...] = (),
    tmpfs_mb: int = 64,
) -> list[str]:
    """The bubblewrap prefix for one display (the argv up to and including ``--``).

    The sandbox's filesystem is an allow-list (``bwrap_command``): besides ``/usr`` and the interpreter, only the
    worker script (``/rla/worker.py``), the packages it imports (``/rla/site/<name>``), Debian's command links and
    the display's socket are made visible, read-only.
    """
    # /etc/alternatives: Debian's command links (pyscreeze runs `which` at import)
    binds = ("/etc/alternatives", display.socket_path)
    prefix = bwrap_command(tmpfs_mb=tmpfs_mb, hidden_paths=hidden_paths, binds=binds, pythons=(python,))
    if prefix[-1] != "--":
        raise RuntimeError(f"unexpected bwrap prefix (no trailing '--'): {prefix}")
    prefix = prefix[:-1] + ["--perms", "0755", "--dir", _INSIDE, "--ro-bind", _WORKER, f"{_INSIDE}/worker.py"]
    prefix += ["--perms", "0755", "--dir", f"{_INSIDE}/site"]
    for path in site_dirs:
        prefix += ["--ro-bind", path, f"{_INSIDE}/site/{Path(path).name}"]
    if not unprivileged and os.getuid() == 0:
        prefix += ["--cap-drop", "ALL"]
    return [*prefix, "--"]


class ActionSandbox:
    """A long-lived sandboxed worker executing actions on ``display``.

    Args:
        display: the display the actions drive.
        hidden_paths: host directories covered with an empty tmpfs inside the sandbox (run folders, task data).
        uid: the unprivileged uid the worker drops to when the library runs as root (the episode's own).
        action_timeout_s: wall-clock limit of one action.
        pause_s: pyautogui's pause after each call (its ``PAUSE``).
        require_bwrap: raise when bubblewrap does not work here instead of falling back to a plain subprocess.
    """

    def __init__(
        self,
        display: XDisplay,
        *,
        hidden_paths: tuple[str, ...] = (),
        uid: int = _NOBODY,
        action_timeout_s: float = 30.0,
        pause_s: float = 0.05,
        require_bwrap: bool = False,
    ) -> None:
        if action_timeout_s <= 0:
            raise ValueError(f"action_timeout_s must be > 0, got {action_timeout_s}")
        self.display = display
        self.hidden_paths = hidden_paths
        if uid <= 0:
            raise ValueError(f"uid must be an unprivileged uid (> 0), got {uid!r}")
        self.uid = uid
        self.action_timeout_s = action_timeout_s
        self.pause_s = pause_s
        self.site_dirs = _site_dirs()
        root = os.getuid() == 0
        try:
            python = resolve_python(None, unprivileged=root)
        except RuntimeError:
            python = sys.executable
        readable = _world_readable(_WORKER) and all(_world_readable(d) for d in self.site_dirs)
        self.unprivileged = root and readable and _same_python(python)
        if root and not self.unprivileged:
            python = sys.executable
            warnings.warn(
                "the desktop action worker runs as root inside bubblewrap with all capabilities dropped: its Python "
                "packages (or an interpreter of this Python version) are not reachable by an unprivileged uid",
                RuntimeWarning,
                stacklevel=2,
            )
        self.python = python
        works, reason = bwrap_status()
        if not works and require_bwrap:
            raise RuntimeError(f"bubblewrap is required for desktop actions: {reason}")
        if not works:
            warnings.warn(f"desktop actions run WITHOUT bubblewrap: {reason}", RuntimeWarning, stacklevel=2)
        self.bwrap = works
        self._proc: subprocess.Popen[bytes] | None = None
        self.kills = 0  # workers killed after a hung or crashed action

    def _command(self) -> list[str]:
        uid = self.uid if self.unprivileged else -1
        if not self.bwrap:  # documented fallback (a warning said so): the host's paths, no namespace
            parents = sorted({str(Path(d).parent) for d in self.site_dirs})
            return [self.python, "-I", "-S", _WORKER, json.dumps(parents), str(uid), str(self.pause_s), "0"]
        site = [f"{_INSIDE}/site"]
        worker = [self.python, "-I", "-S", f"{_INSIDE}/worker.py", json.dumps(site), str(uid), str(self.pause_s), "1"]
        argv = sandbox_argv(
            self.display,
            hidden_paths=self.hidden_paths,
            unprivileged=self.unprivileged,
            python=self.python,
            site_dirs=tuple(self.site_dirs),
        )
        return argv + worker

    def _start(self) -> None:
        env = {"DISPLAY": self.display.name, "PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        self._proc = subprocess.Popen(
            self._command(),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        hello = self._read_line(self.action_timeout_s)
        if hello is None or not hello.get("ready"):
            self.close()
            raise RuntimeError(f"the action worker did not start on {self.display.name}: {hello}")

    def _read_line(self, timeout_s: float) -> dict[str, Any] | None:
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        if not ready:
            return None
        line = proc.stdout.readline()
        if not line:
            return None
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            return None
        return answer if isinstance(answer, dict) else None

    def execute(self, action: Action) -> ActionResult:
        """Run one ``CODE`` or ``CALLS`` action; a hang or crash kills the worker and is reported, not raised."""
        if action.kind not in (ActionKind.CODE, ActionKind.CALLS):
            raise ValueError(f"only code/calls actions run in the sandbox, got {action.kind}")
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        payload: dict[str, Any] = (
            {"code": action.code} if action.kind is ActionKind.CODE else {"calls": [list(c) for c in action.calls]}
        )
        try:
            self._proc.stdin.write((json.dumps(payload) + "\n").encode())
            self._proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            return ActionResult(False, "the action worker died")
        answer = self._read_line(self.action_timeout_s)
        if answer is None:
            alive = self._proc.poll() is None
            self.close()
            self.kills += 1
            why = f"timed out after {self.action_timeout_s:.0f}s" if alive else "the action ended the worker"
            return ActionResult(False, why)
        return ActionResult(bool(answer.get("ok")), str(answer.get("error", "")))

    def execute_code(self, code: str) -> ActionResult:
        """Run pyautogui ``code`` (library-written, e.g. a save) like an action."""
        from rlanything_core.envs.desktop.actions import parse_action

        return self.execute(parse_action(code))

    def close(self) -> None:
        """Kill the worker's process group (bubblewrap and everything inside it)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process_group(proc, timeout_s=5)
