"""OSWorld-format desktop tasks without VMs (Xvfb + LibreOffice Calc), and an adapter for OSWorld's own environment.

Import the parts you need (:mod:`.env`, :mod:`.task`, :mod:`.evaluator`, :mod:`.osworld_adapter`); nothing here
starts a display at import time.
"""

from rlanything_core.envs.desktop.task import DesktopTask, UnsupportedTaskError, load_task, parse_task

__all__ = ["DesktopTask", "UnsupportedTaskError", "load_task", "parse_task"]
