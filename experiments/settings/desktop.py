"""``+setting=desktop``: the agent loop on OSWorld-format LibreOffice Calc tasks through the text view.

At CPU scale the policy reads the cell grid and scores the candidate actions derived from it (any
``ActionSelector``: likelihood over candidates, or free generation with ``\\boxed{index}``); each candidate runs as
GUI actions in real LibreOffice on Xvfb, and the episode is won when the task's OSWorld evaluator scores 1.0.
Environment adaptation adds or removes the task's hint (the evaluator never changes). Evaluation splits: ``calc``
(the shipped tasks as written) and ``calc_hint`` (the same tasks with their hints). The parts
``experiments/conf/setting/desktop.yaml`` names (``experiments/setting.py``): :func:`desktop_tasks`,
:func:`desktop_rewriter` and :func:`validate_desktop`; the loop is the agent loop (``experiments/agent_loop.py``).
Rollouts run on the transformers backend only (the yaml's ``backends``): ``backend=vllm`` is refused by name.

Own tasks: ``setting.tasks_dir`` names a folder of OSWorld-format tasks (OSWorld's ``evaluation_examples`` or a
folder of JSONs, see :mod:`rlanything_core.envs.desktop.task_folder`), ``setting.domains`` the OSWorld domains to
take from it, ``setting.cache_dir`` the file cache in OSWorld's layout, ``setting.skip_unsupported`` whether a task
that cannot run here is skipped (and counted) or stops the run; an optional ``hints.json`` (``{task id: hint}``)
beside the tasks gives the hint variants. The text view drives spreadsheets: tasks that open no spreadsheet are
refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments.config_error import ConfigError
from experiments.setting import Tasks
from rlanything_core.collect.agent import SequentialRunner
from rlanything_core.environment.rewriters.desktop_hints import DesktopHintRewriter
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.desktop.task import DesktopTask, UnsupportedTaskError, load_task
from rlanything_core.envs.desktop.task_folder import load_task_folder
from rlanything_core.envs.desktop.text_env import DesktopTextEnvFactory, DisplayPool
from rlanything_core.envs.desktop.variants import hint_variant, load_hints, shipped_tasks
from rlanything_core.loop.evaluation import EvalSplit

__all__ = [
    "desktop_env_task",
    "desktop_rewriter",
    "desktop_roots",
    "desktop_task_list",
    "desktop_tasks",
    "validate_desktop",
]

_SHEETS = (".xlsx", ".xls", ".ods", ".csv")


def _opens_a_sheet(task: Any) -> bool:
    return any(
        step.get("type") == "open" and str(step.get("parameters", {}).get("path", "")).lower().endswith(_SHEETS)
        for step in task.config
    )


def desktop_task_list(cfg: DictConfig) -> tuple[list[DesktopTask], dict[str, str]]:
    """``(tasks sorted by id, {task id: hint})``: the shipped tasks, or those of ``setting.tasks_dir``.

    Raises:
        ConfigError: ``setting.tasks_dir``/``setting.cache_dir`` is not a folder, a task does not load (without
            ``setting.skip_unsupported``), or no task the text view can drive is left.
    """
    st = cfg.setting
    if st.get("tasks_dir") is None:
        if st.get("cache_dir") is not None:
            raise ConfigError("setting.cache_dir", "a cache applies to setting.tasks_dir only", "set both or neither")
        return shipped_tasks(), load_hints()
    domains = list(st.domains) if st.get("domains") else None
    try:
        folder = load_task_folder(
            st.tasks_dir, domains=domains, cache_dir=st.get("cache_dir"), skip_unsupported=bool(st.skip_unsupported)
        )
    except (ValueError, UnsupportedTaskError) as exc:
        key = "setting.cache_dir" if "cache_dir" in str(exc).split(" ")[0] else "setting.tasks_dir"
        raise ConfigError(
            key,
            str(exc),
            "point it at OSWorld's evaluation_examples or a folder of task JSONs, "
            "with their files in setting.cache_dir, or set setting.skip_unsupported=true",
        ) from None
    # the text view reads the grid of the spreadsheet a task opens: a task that opens none cannot be played
    tasks = [t for t in folder.tasks if _opens_a_sheet(t)]
    if not tasks:
        raise ConfigError(
            "setting.tasks_dir",
            "no task opens a spreadsheet (the text view drives Calc)",
            "choose setting.domains=[libreoffice_calc] or add Calc tasks",
        )
    hints_file = Path(st.tasks_dir) / "hints.json"
    hints = dict(json.loads(hints_file.read_text())) if hints_file.is_file() else {}
    return sorted(tasks, key=lambda t: t.task_id), hints


def desktop_roots(cfg: DictConfig) -> list[TaskSpec]:
    """The training pool: the first ``setting.train_games`` shipped tasks (sorted by id), as ``TaskSpec``."""
    every, hints = desktop_task_list(cfg)
    tasks = [t for t in every if not t.infeasible or bool(cfg.setting.include_infeasible)]
    limit = cfg.setting.train_games
    tasks = tasks if limit is None else tasks[: int(limit)]
    if not tasks:
        raise ConfigError("setting.train_games", "no desktop task selected", "set setting.train_games >= 1")
    cache = cfg.setting.get("cache_dir")
    return [
        TaskSpec(
            task_id=t.task_id,
            kind="desktop",
            root_id=t.task_id,
            data={
                "task_json": str(t.json_path or t.task_dir / f"{t.task_id}.json"),
                "instruction": t.instruction,
                "hint": hints.get(t.task_id, ""),
                "cache_dir": cache,
            },
        )
        for t in tasks
    ]


def desktop_env_task(spec: TaskSpec) -> DesktopTask:
    """A pool task -> the ``DesktopTask`` it stands for (its instruction as rewritten, the JSON's evaluator)."""
    task = load_task(spec.data["task_json"], cache_dir=spec.data.get("cache_dir"))
    return task.with_instruction(spec.data["instruction"], task_id=spec.task_id)


def _eval_splits(cfg: DictConfig) -> list[EvalSplit]:
    """The evaluation splits, as ``EvalSplit``: ``calc`` and ``calc_hint`` (see the module docstring).

    ``calc`` holds the first ``eval.games`` feasible shipped tasks, ``calc_hint`` the same tasks with their hints.
    """
    every, hints = desktop_task_list(cfg)
    evals = [t for t in every if not t.infeasible][: int(cfg.eval.games)]
    return [
        EvalSplit("calc", tuple(evals), tuple(t.task_id for t in evals)),
        EvalSplit(
            "calc_hint",
            # a task without a hint (own tasks need no hints.json) appears as written
            tuple(hint_variant(t, hints[t.task_id]) if hints.get(t.task_id) else t for t in evals),
            tuple(f"{t.task_id}__hint" for t in evals),
        ),
    ]


def validate_desktop(cfg: DictConfig) -> None:
    """One worker (the displays are shared in-process); a bad ``tasks_dir`` or ``cache_dir`` fails here, before any
    model is loaded."""
    if int(cfg.setting.env_workers) != 1:
        raise ConfigError("setting.env_workers", "desktop episodes share a display pool in-process", "set it to 1")
    desktop_task_list(cfg)


def desktop_tasks(cfg: DictConfig) -> Tasks:
    """The pool (:func:`desktop_roots`), the splits, and the real apps on one pool of displays, an episode at a time."""
    displays = DisplayPool(settle_s=float(cfg.setting.settle_s))
    return Tasks(
        roots=desktop_roots(cfg),
        splits=_eval_splits(cfg),
        runner=SequentialRunner(DesktopTextEnvFactory(displays, max_episode_steps=int(cfg.setting.max_steps))),
        eval_runner=SequentialRunner(
            DesktopTextEnvFactory(displays, max_episode_steps=int(cfg.setting.eval_max_steps))
        ),
        to_env_task=desktop_env_task,
    )


def desktop_rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]) -> Any:
    """Adds or removes the task's hint (the evaluator never changes)."""
    return DesktopHintRewriter()
