"""Each agent setting's parts as plain values: its pool's tasks, its evaluation splits, its environments, its checks.

A setting is a dataclass (:class:`~rlanything_core.settings.protocol.AgentTasks`) built from paths, sizes and seeds; it
never reads a config. ``rlanything_core/conf/setting/<name>.yaml`` names it under ``setting.parts.environment`` and the
one builder (``rlanything_core/assembly/build.py``) plays it through the agent loop
(``rlanything_core/assembly/agent.py``).

- :mod:`~rlanything_core.settings.alfworld`: ALFWorld's games, the planner as step oracle;
- :mod:`~rlanything_core.settings.textworld`: TextWorld games generated on a grid of (rooms, quest length) cells;
- :mod:`~rlanything_core.settings.miniwob`: MiniWoB++ pages in Chromium, by family and by name;
- :mod:`~rlanything_core.settings.desktop`: OSWorld-format LibreOffice Calc tasks through the text view;
- :mod:`~rlanything_core.settings.coding`: coding problems and their evaluation split (single-step, in the sandbox).
"""

from __future__ import annotations

from rlanything_core.settings.protocol import AgentTasks, Runner, SettingError

__all__ = ["AgentTasks", "Runner", "SettingError"]
