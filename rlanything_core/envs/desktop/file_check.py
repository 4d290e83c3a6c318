"""Score result files against a task's evaluator without a display: the checker path of task authoring and tests.

:func:`score_files` runs the task's metrics (:func:`~.evaluator.evaluate_task`) on the files an episode folder holds.
Of ``postconfig`` it runs only the steps that act on files (downloads, shell commands in the command sandbox) and
skips those that need the desktop (:func:`~.config_steps.needs_display`: focus the window, press Ctrl+S, a
LibreOffice ``--convert-to`` export): the files under the episode's ``/home/user`` are taken as saved, exports
included. Gold files come from the task's cache as in an episode.
"""

from __future__ import annotations

import dataclasses

from rlanything_core.envs.desktop.config_steps import StepContext, needs_display
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import Outcome, evaluate_task
from rlanything_core.envs.desktop.task import DesktopTask

__all__ = ["score_files"]


def score_files(
    task: DesktopTask, fs: EpisodeFS, *, last_action: str | None = "DONE", screen: tuple[int, int] = (1920, 1080)
) -> Outcome:
    """The task's score for the files in ``fs`` as they are (see the module docstring).

    Args:
        task: a loaded task.
        fs: the episode folder holding the result files at their VM paths.
        last_action: the agent's last action (``"FAIL"`` matters: it wins an infeasible task, loses any other).
        screen: the screen size OSWorld's placeholders in commands stand for.
    """
    post = [step for step in task.evaluator.get("postconfig", []) or [] if not needs_display(step)]
    checked = dataclasses.replace(task, evaluator={**task.evaluator, "postconfig": post})
    ctx = StepContext(fs, None, None, task.task_dir, screen, task.files)
    return evaluate_task(checked, ctx, last_action=last_action)
