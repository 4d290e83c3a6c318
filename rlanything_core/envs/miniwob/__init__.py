"""MiniWoB++ pages in a real headless Chromium: the GUI-agent setting at CPU scale (see ``env.py``)."""

from rlanything_core.envs.miniwob.browser import Browser, BrowserStartError, browser_binaries
from rlanything_core.envs.miniwob.env import MiniwobEnv, MiniwobEnvFactory, shutdown_browsers
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, MiniwobTaskSpec, UnknownTaskError, resolve_task

__all__ = [
    "CURATED_TASKS",
    "Browser",
    "BrowserStartError",
    "MiniwobEnv",
    "MiniwobEnvFactory",
    "MiniwobTaskSpec",
    "UnknownTaskError",
    "browser_binaries",
    "resolve_task",
    "shutdown_browsers",
]
