"""The shipped Calc tasks and their hint variants, for environment adaptation.

As in the paper, adapting a GUI task changes only its instruction: a hint is added (easier) or removed (harder);
the set-up and the evaluator stay byte-for-byte the same, so a variant is scored exactly like its original.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

from rlanything_core.envs.desktop.task import DesktopTask, load_task

__all__ = ["HINT_PREFIX", "HintMode", "TASKS_DIR", "hint_variant", "load_hints", "shipped_tasks", "strip_hint"]

TASKS_DIR = Path(__file__).with_name("tasks")
HINT_PREFIX = " Hint: "


class HintMode(str, Enum):
    """Which way a variant moves the instruction."""

    ADD = "add"  # append the task's hint
    REMOVE = "remove"  # drop a hint already in the instruction


def shipped_tasks(tasks_dir: Path = TASKS_DIR) -> list[DesktopTask]:
    """Every task JSON shipped with the package, sorted by id."""
    return sorted((load_task(p) for p in tasks_dir.glob("*.json")), key=lambda t: t.task_id)


def load_hints(tasks_dir: Path = TASKS_DIR) -> dict[str, str]:
    """``{task id: hint}`` of the shipped tasks."""
    return dict(json.loads((tasks_dir / "variants" / "hints.json").read_text()))


def strip_hint(instruction: str) -> str:
    """The instruction without a trailing ``" Hint: ..."``."""
    index = instruction.find(HINT_PREFIX)
    return instruction if index < 0 else instruction[:index]


def hint_variant(task: DesktopTask, hint: str, mode: HintMode = HintMode.ADD) -> DesktopTask:
    """The task with ``hint`` appended (``ADD``) or any hint removed (``REMOVE``); same set-up and evaluator.

    The variant's id is ``<id>__hint`` or ``<id>__nohint``.

    Raises:
        ValueError: an empty hint for ``ADD``.
    """
    base = strip_hint(task.instruction)
    if mode is HintMode.ADD:
        if not hint.strip():
            raise ValueError("hint must be non-empty to add it")
        return task.with_instruction(f"{base}{HINT_PREFIX}{hint.strip()}", task_id=f"{task.task_id}__hint")
    return task.with_instruction(base, task_id=f"{task.task_id}__nohint")
