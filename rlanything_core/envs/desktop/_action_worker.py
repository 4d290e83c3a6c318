"""The action worker: runs INSIDE bubblewrap and executes GUI actions on one X display.

Started as ``python -I -S _action_worker.py SITE_DIRS_JSON UID``. It drops to ``UID`` (when >= 0) before importing
anything from the site directories, then reads one JSON request per line on stdin (``{"code": str}`` or
``{"calls": [[name, args, kwargs], ...]}``) and answers one JSON line (``{"ok": bool, "error": str}``) on the
original stdout; anything the action prints goes to stderr. This file is never imported by the library.
"""

import json
import os
import sys
import time
import traceback
import types
from typing import Any


def _answer(out: Any, **payload: Any) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


def main() -> None:
    site_dirs = json.loads(sys.argv[1])
    uid = int(sys.argv[2])
    pause = float(sys.argv[3])
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if uid >= 0 and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    sys.path.extend(site_dirs)
    # pyautogui imports mouseinfo only for its interactive mouseInfo() window; mouseinfo exits the process when
    # tkinter is missing, so a placeholder module stands in for it.
    sys.modules["mouseinfo"] = types.ModuleType("mouseinfo")
    import pyautogui

    pyautogui.FAILSAFE = False
    pyautogui.PAUSE = pause
    _answer(out, ready=True, uid=os.getuid())
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if "code" in request:
                namespace = {"pyautogui": pyautogui, "time": time, "__name__": "__action__"}
                exec(compile(request["code"], "<action>", "exec"), namespace)
            else:
                for name, args, kwargs in request["calls"]:
                    getattr(pyautogui, name)(*args, **kwargs)
            _answer(out, ok=True, error="")
        except BaseException as exc:  # the action's own failure is data for the caller
            tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            _answer(out, ok=False, error=tail[:500])


if __name__ == "__main__":
    main()
