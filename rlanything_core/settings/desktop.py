"""The desktop's parts: OSWorld-format LibreOffice Calc tasks played through the text view, in real apps on Xvfb.

:class:`DesktopTasks` is what ``rlanything_core/conf/setting/desktop.yaml`` names (``setting.parts.environment``). At
CPU scale the policy reads the cell grid and scores the candidate actions derived from it; each candidate runs as GUI
actions in real LibreOffice, and the episode is won when the task's OSWorld evaluator scores 1.0. Environment adaptation
adds or removes the task's hint (the evaluator never changes). Evaluation splits: ``calc`` (the shipped tasks as
written) and ``calc_hint`` (the same tasks with their hints).

Own tasks: ``tasks_dir`` names a folder of OSWorld-format tasks (OSWorld's ``evaluation_examples`` or a folder of
JSONs, see :mod:`rlanything_core.envs.desktop.task_folder`), ``domains`` the OSWorld domains to take from it,
``cache_dir`` the file cache in OSWorld's layout, ``skip_unsupported`` whether a task that cannot run here is skipped
(and counted) or stops the run; an optional ``hints.json`` (``{task id: hint}``) beside the tasks gives the hint
variants. The text view drives spreadsheets: tasks that open no spreadsheet are refused. The episodes share one pool
of displays in this process (:attr:`~rlanything_core.settings.protocol.Runner.IN_PROCESS`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.envs.desktop.task import DesktopTask, UnsupportedTaskError, load_task
from rlanything_core.envs.desktop.task_folder import load_task_folder
from rlanything_core.envs.desktop.text_env import DesktopTextEnvFactory, DisplayPool
from rlanything_core.envs.desktop.variants import hint_variant, load_hints, shipped_tasks
from rlanything_core.loop.evaluation import EvalSplit
from rlanything_core.settings.protocol import Runner, SettingError

__all__ = ["DesktopTasks", "desktop_env_task"]

_SHEETS = (".xlsx", ".xls", ".ods", ".csv")


@dataclass(frozen=True)
class DesktopTasks:
    """The desktop as a setting (:class:`~rlanything_core.settings.protocol.AgentTasks`).

    Attributes:
        train_games: the training pool: the first N tasks by id (``None``: all).
        include_infeasible: keep the infeasible tasks (right answer: FAIL) in the training pool.
        eval_games: feasible tasks per evaluation split.
        settle_s: pause after each GUI action before the next one.
        tasks_dir: a folder of OSWorld-format tasks instead of the shipped ones (``None``: the shipped ones).
        domains: the OSWorld domains to take from ``tasks_dir``.
        cache_dir: their input and gold files, in OSWorld's cache layout (only with ``tasks_dir``).
        skip_unsupported: skip (and count) tasks that cannot run here instead of stopping.
    """

    runner: ClassVar[Runner] = Runner.IN_PROCESS

    train_games: int | None = 12
    include_infeasible: bool = False
    eval_games: int = 8
    settle_s: float = 0.15
    tasks_dir: str | None = None
    domains: Sequence[str] | None = ("libreoffice_calc",)
    cache_dir: str | None = None
    skip_unsupported: bool = False

    def check(self) -> None:
        """A bad ``tasks_dir`` or ``cache_dir``, or an empty pool, fails here, before any model is loaded.

        Raises:
            SettingError: naming ``tasks_dir``, ``cache_dir`` or ``train_games``.
        """
        self.roots()

    def task_list(self) -> tuple[list[DesktopTask], dict[str, str]]:
        """``(tasks sorted by id, {task id: hint})``: the shipped tasks, or those of ``tasks_dir``.

        Raises:
            SettingError: ``tasks_dir``/``cache_dir`` is not a folder, a task does not load (without
                ``skip_unsupported``), or no task the text view can drive is left.
        """
        if self.tasks_dir is None:
            if self.cache_dir is not None:
                raise SettingError("cache_dir", "a cache applies to setting.tasks_dir only", "set both or neither")
            return shipped_tasks(), load_hints()
        domains = list(self.domains) if self.domains else None
        try:
            folder = load_task_folder(
                self.tasks_dir, domains=domains, cache_dir=self.cache_dir, skip_unsupported=bool(self.skip_unsupported)
            )
        except (ValueError, UnsupportedTaskError) as exc:
            param = "cache_dir" if "cache_dir" in str(exc).split(" ")[0] else "tasks_dir"
            raise SettingError(
                param,
                str(exc),
                "point it at OSWorld's evaluation_examples or a folder of task JSONs, "
                "with their files in setting.cache_dir, or set setting.skip_unsupported=true",
            ) from None
        # the text view reads the grid of the spreadsheet a task opens: a task that opens none cannot be played
        tasks = [t for t in folder.tasks if _opens_a_sheet(t)]
        if not tasks:
            raise SettingError(
                "tasks_dir",
                "no task opens a spreadsheet (the text view drives Calc)",
                "choose setting.domains=[libreoffice_calc] or add Calc tasks",
            )
        hints_file = Path(self.tasks_dir) / "hints.json"
        hints = dict(json.loads(hints_file.read_text())) if hints_file.is_file() else {}
        return sorted(tasks, key=lambda t: t.task_id), hints

    def roots(self) -> list[TaskSpec]:
        """The training pool: the first ``train_games`` tasks (sorted by id), as ``TaskSpec``.

        Raises:
            SettingError: no task is selected (or see :meth:`task_list`).
        """
        every, hints = self.task_list()
        tasks = [t for t in every if not t.infeasible or bool(self.include_infeasible)]
        tasks = tasks if self.train_games is None else tasks[: int(self.train_games)]
        if not tasks:
            raise SettingError("train_games", "no desktop task selected", "set setting.train_games >= 1")
        return [
            TaskSpec(
                task_id=t.task_id,
                kind="desktop",
                root_id=t.task_id,
                data={
                    "task_json": str(t.json_path or t.task_dir / f"{t.task_id}.json"),
                    "instruction": t.instruction,
                    "hint": hints.get(t.task_id, ""),
                    "cache_dir": self.cache_dir,
                },
            )
            for t in tasks
        ]

    def splits(self) -> list[EvalSplit]:
        """``calc``: the first ``eval_games`` feasible tasks; ``calc_hint``: the same tasks with their hints."""
        every, hints = self.task_list()
        evals = [t for t in every if not t.infeasible][: int(self.eval_games)]
        return [
            EvalSplit("calc", tuple(evals), tuple(t.task_id for t in evals)),
            EvalSplit(
                "calc_hint",
                # a task without a hint (own tasks need no hints.json) appears as written
                tuple(hint_variant(t, hints[t.task_id]) if hints.get(t.task_id) else t for t in evals),
                tuple(f"{t.task_id}__hint" for t in evals),
            ),
        ]

    def env_factory(self, max_steps: int) -> DesktopTextEnvFactory:
        """Real apps of ``max_steps`` text actions per episode, on this setting's one pool of displays."""
        return DesktopTextEnvFactory(self._displays, max_episode_steps=max_steps)

    def to_env_task(self, task: TaskSpec) -> DesktopTask:
        """See :func:`desktop_env_task`."""
        return desktop_env_task(task)

    def step_oracle(self) -> None:
        """The desktop has no step oracle."""
        return None

    @cached_property
    def _displays(self) -> DisplayPool:
        """The displays every episode of this setting draws on (started on the first episode)."""
        return DisplayPool(settle_s=float(self.settle_s))


def desktop_env_task(spec: TaskSpec) -> DesktopTask:
    """A pool task -> the ``DesktopTask`` it stands for (its instruction as rewritten, the JSON's evaluator)."""
    task = load_task(spec.data["task_json"], cache_dir=spec.data.get("cache_dir"))
    return task.with_instruction(spec.data["instruction"], task_id=spec.task_id)


def _opens_a_sheet(task: Any) -> bool:
    """Whether ``task``'s config opens a spreadsheet (the text view's grid)."""
    return any(
        step.get("type") == "open" and str(step.get("parameters", {}).get("path", "")).lower().endswith(_SHEETS)
        for step in task.config
    )
