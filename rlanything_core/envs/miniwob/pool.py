"""Worker processes with their own browsers: ``EnvPool`` whose workers leave no Chromium behind.

Each worker starts a new session (``os.setsid``), so it and every driver and browser process it starts share one
process group. Stopping a worker (at ``close``, or when it crashed or hung) kills that whole group, so a browser
never outlives its worker, even when the worker was killed mid-step. The batch machinery is
:class:`~rlanything_core.envs.parallel.EnvPool`'s: a crash or hang ends only the episode in flight (``worker_crash``
/ ``worker_timeout``), the worker restarts, and its other episodes are replayed (pages are seeded, so they replay
exactly). A browser error inside a step (``browser_error: ...``) ends that episode; the browser is replaced.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from rlanything_core.envs.parallel import EnvPool, _worker_main
from rlanything_core.envs.protocols import AgentEnv

__all__ = ["BrowserEnvPool"]


def _session_worker_main(conn: Connection, env_factory: Callable[[Any], AgentEnv]) -> None:
    """``EnvPool``'s worker loop in a new session (its own process group), quitting its browsers at the end."""
    os.setsid()
    try:
        _worker_main(conn, env_factory)
    finally:
        from rlanything_core.envs.miniwob.env import shutdown_browsers

        shutdown_browsers()


class BrowserEnvPool(EnvPool):
    """:class:`EnvPool` for browser environments: one session per worker, killed as a whole when it stops.

    Args:
        env_factory: picklable ``task -> AgentEnv`` (e.g. :class:`~rlanything_core.envs.miniwob.env.
            MiniwobEnvFactory`).
        num_workers: worker processes (each starts browsers as it needs them: one per live episode it hosts).
        step_timeout_s: a step with no answer in this time counts as a hung browser (the worker is restarted).
        reset_timeout_s: the same for a reset (a fresh worker imports Selenium and starts a browser: seconds).
    """

    _worker_loop = staticmethod(_session_worker_main)

    def __init__(
        self,
        env_factory: Callable[[Any], AgentEnv],
        *,
        num_workers: int = 1,
        step_timeout_s: float = 30.0,
        reset_timeout_s: float = 90.0,
    ) -> None:
        super().__init__(
            env_factory, num_workers=num_workers, step_timeout_s=step_timeout_s, reset_timeout_s=reset_timeout_s
        )

    def _stop_worker(self, w: int) -> None:
        pid = int(self._workers[w].process.pid)
        super()._stop_worker(w)
        try:
            os.killpg(pid, signal.SIGKILL)  # its session: the driver and every browser process it started
        except (ProcessLookupError, PermissionError):
            pass
        from rlanything_core.envs.miniwob.browser import remove_profiles_of

        remove_profiles_of(pid)
