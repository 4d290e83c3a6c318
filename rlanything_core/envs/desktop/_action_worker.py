"""The action worker: runs INSIDE bubblewrap and executes GUI actions on one X display.

Started as ``python -I -S _action_worker.py SITE_DIRS_JSON UID PAUSE IN_NAMESPACE``. It drops to ``UID`` (when >= 0)
before importing anything from the site directories, makes itself non-dumpable (an action, running as the same uid,
can then neither ptrace it nor read its memory through ``/proc``), imports pyautogui's dependencies once, then reads
one JSON request per line on stdin (``{"code": str}`` or ``{"calls": [[name, args, kwargs], ...]}``) and answers one
JSON line (``{"ok": bool, "error": str}``) on the original stdout; anything the action prints goes to stderr.

Stateless between actions by construction: each action runs in a child forked from this clean process (which has
imported pyautogui but never runs an action), with its own connection to the display; a monkeypatch, a module global
or a thread dies with the child. Before
the answer is written, every other process of the sandbox's pid namespace is killed (``kill(-1, SIGKILL)`` as the
worker's uid; outside a namespace, the child's process group): nothing an action started outlives it. This file is
never imported by the library.
"""

import json
import os
import signal
import sys
import time
import traceback
import types
from typing import Any


def _answer(out: Any, **payload: Any) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


def _undumpable() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _run(request: dict[str, Any], pause: float) -> dict[str, Any]:
    """Run one action (in the forked child); the error's last line when it fails."""
    try:
        import pyautogui
        import pyautogui._pyautogui_x11 as x11
        from Xlib.display import Display

        # the parent's connection must not be used by two processes (X request sequence numbers): a fresh one
        x11._display = Display(os.environ["DISPLAY"])
        pyautogui.FAILSAFE = False
        pyautogui.PAUSE = pause
        if "code" in request:
            namespace = {"pyautogui": pyautogui, "time": time, "__name__": "__action__"}
            exec(compile(request["code"], "<action>", "exec"), namespace)
        else:
            for name, args, kwargs in request["calls"]:
                getattr(pyautogui, name)(*args, **kwargs)
        return {"ok": True, "error": ""}
    except BaseException as exc:  # the action's own failure is data for the caller
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"ok": False, "error": tail[:500]}


def _kill_leftovers(child: int, in_namespace: bool) -> None:
    """Kill whatever the action started (threads died with the child; processes may remain)."""
    if in_namespace:
        try:
            os.kill(-1, signal.SIGKILL)  # every process of the namespace this uid may signal, except this one
        except ProcessLookupError:
            pass
    else:
        try:
            os.killpg(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:  # reap what is ours (the rest is re-parented to the namespace's init)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _one(line: str, pause: float, in_namespace: bool) -> dict[str, Any]:
    request = json.loads(line)
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read_fd)
            os.setpgid(0, 0)
            result = _run(request, pause)
            os.write(write_fd, (json.dumps(result) + "\n").encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        # one line, not EOF: a process the action started may hold the pipe open until it is killed below
        raw = pipe.readline()
        os.waitpid(child, 0)
        _kill_leftovers(child, in_namespace)
    if not raw:
        return {"ok": False, "error": "the action ended its process"}
    answer: dict[str, Any] = json.loads(raw)
    return answer


def main() -> None:
    site_dirs = json.loads(sys.argv[1])
    uid = int(sys.argv[2])
    pause = float(sys.argv[3])
    in_namespace = sys.argv[4] == "1"
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if uid >= 0 and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _undumpable()
    sys.path.extend(site_dirs)
    # pyautogui imports mouseinfo only for its interactive mouseInfo() window; mouseinfo exits the process when
    # tkinter is missing, so a placeholder module stands in for it.
    sys.modules["mouseinfo"] = types.ModuleType("mouseinfo")
    # the imports happen once here (pyautogui connects to the display and reads its keyboard mapping at import)
    import pyautogui  # noqa: F401

    _answer(out, ready=True, uid=os.getuid())
    for line in sys.stdin:
        try:
            answer = _one(line, pause, in_namespace)
        except Exception as exc:  # a malformed request is the caller's bug: say so, keep serving
            answer = {"ok": False, "error": f"worker: {type(exc).__name__}: {exc}"[:500]}
        _answer(out, **answer)


if __name__ == "__main__":
    main()
