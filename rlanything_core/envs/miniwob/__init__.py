"""MiniWoB++ pages (all the wheel ships, and one's own) in a real headless Chromium: the GUI setting at CPU scale."""

from rlanything_core.envs.miniwob.browser import Browser, BrowserStartError, browser_binaries
from rlanything_core.envs.miniwob.env import MiniwobEnv, MiniwobEnvFactory, shutdown_browsers
from rlanything_core.envs.miniwob.page_folder import PageFolderError, load_page_folder
from rlanything_core.envs.miniwob.tasks import (
    CURATED_TASKS,
    MiniwobTaskSpec,
    UnknownTaskError,
    all_tasks,
    resolve_task,
    select_tasks,
)

__all__ = [
    "CURATED_TASKS",
    "Browser",
    "BrowserStartError",
    "MiniwobEnv",
    "MiniwobEnvFactory",
    "MiniwobTaskSpec",
    "PageFolderError",
    "UnknownTaskError",
    "all_tasks",
    "browser_binaries",
    "load_page_folder",
    "resolve_task",
    "select_tasks",
    "shutdown_browsers",
]
