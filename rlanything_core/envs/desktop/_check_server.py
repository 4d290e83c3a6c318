"""The check server: started by :class:`~rlanything_core.envs.desktop.checker.Checker`, never imported by the library.

``python -m rlanything_core.envs.desktop._check_server`` imports the metric libraries once, then reads one JSON
request per line on stdin and answers one JSON line on stdout. Each request is scored in a child forked for it
(limits applied first: ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_CPU``), which the server kills when it runs over the
wall-clock limit. Answers: ``{"score", "metrics", "error"}`` or ``{"limit": name, "detail": str}``.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import openpyxl  # noqa: F401  (imported once here, not in every check)
import pandas  # noqa: F401

from rlanything_core.envs.desktop.config_steps import StepContext
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import score_files
from rlanything_core.envs.desktop.task import DesktopTask


def _limit(time_s: float, memory_mb: int, file_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))
    cpu = int(time_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too large write then fails with EFBIG, reported below


def _score(request: dict[str, Any]) -> dict[str, Any]:
    """Score one request (in the forked child)."""
    limits = request["limits"]
    try:
        _limit(limits["time_s"], limits["memory_mb"], limits["file_mb"])
        t = request["task"]
        task = DesktopTask(
            t["task_id"], t["instruction"], tuple(t["config"]), t["evaluator"], Path(t["task_dir"]), t["raw"],
            cache_dir=None if t["cache_dir"] is None else Path(t["cache_dir"]), cache_key=t["cache_key"],
            json_path=None if t["json_path"] is None else Path(t["json_path"]),
        )
        fs = EpisodeFS(request["root"], owner=request.get("owner"))
        profile = request.get("profile_dir")
        ctx = StepContext(fs, None, None, task.task_dir, tuple(request["screen"]), task.files,
                          profile_dir=None if profile is None else Path(profile))
        outcome = score_files(task, ctx, postconfig_error=request["postconfig_error"])
        return {"score": outcome.score, "metrics": [list(m) for m in outcome.metrics], "error": outcome.error}
    except MemoryError:
        return {"limit": "memory", "detail": f"over {limits['memory_mb']} MiB"}
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            return {"limit": "file_size", "detail": f"a file over {limits['file_mb']} MiB"}
        return {"score": 0.0, "metrics": [], "error": f"evaluation failed: {type(exc).__name__}: {exc}"}
    except Exception as exc:  # a broken metric input is a failed episode, with its reason
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"score": 0.0, "metrics": [], "error": f"evaluation failed: {tail}"[:1000]}


def _check(request: dict[str, Any]) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        code = 0
        try:
            os.close(read_fd)
            answer = _score(request)
            os.write(write_fd, (json.dumps(answer) + "\n").encode())
        except BaseException:  # the server must never see a child return into its loop
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    time_s = float(request["limits"]["time_s"])
    deadline = time.monotonic() + time_s
    data = b""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                break
            chunk = pipe.read(65536)
            if not chunk:
                break
            data += chunk
    if not data.endswith(b"\n"):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(child, 0)
    if data.endswith(b"\n"):
        scored: dict[str, Any] = json.loads(data)
        return scored
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGXCPU):
        return {"limit": "crash", "detail": f"the check died of signal {os.WTERMSIG(status)}"}
    if os.WIFEXITED(status) and time.monotonic() < deadline:
        return {"limit": "crash", "detail": f"the check exited with {os.WEXITSTATUS(status)} and no answer"}
    return {"limit": "time", "detail": f"over {time_s:g} s"}


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever a metric prints must not corrupt the answers
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            answer = _check(json.loads(line))
        except Exception as exc:  # a malformed request is the caller's bug: say so, keep serving
            answer = {"limit": "crash", "detail": f"check server: {type(exc).__name__}: {exc}"[:1000]}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
