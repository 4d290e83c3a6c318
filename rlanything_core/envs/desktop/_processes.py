"""Stopping a helper process of the desktop environment (the action worker, the check server) and its group."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

__all__ = ["stop_process_group"]


def stop_process_group(proc: subprocess.Popen[Any], *, timeout_s: float) -> None:
    """SIGKILL ``proc``'s process group (it leads one: ``start_new_session``), reap it and close its pipes."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=timeout_s)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
