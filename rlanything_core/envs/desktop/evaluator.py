"""Score an episode as OSWorld's ``DesktopEnv.evaluate`` does, on the local file system.

1. ``func == "infeasible"``: 1.0 when the last action was ``FAIL``, else 0.0 (nothing else runs).
2. Any other task whose last action was ``FAIL``: 0.0.
3. Run ``postconfig`` (e.g. focus the window, Ctrl+S). The environment runs it in two phases
   (:func:`~.config_steps.postconfig_phases`): the desktop steps while the apps run, the file steps (exports,
   downloads, commands) after every app is stopped and every link is gone.
4. One metric: ``metric(result, expected, **options)`` (or ``metric(result, **options)`` without ``expected``); a
   missing result file scores 0.0. A list of metrics with ``conj="and"``: 0.0 at the first metric scoring 0 (or the
   first missing result), else the mean; ``conj="or"``: 1.0 at the first metric scoring 1, else the maximum.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rlanything_core.envs.desktop.config_steps import StepContext, run_step
from rlanything_core.envs.desktop.getters import GETTERS
from rlanything_core.envs.desktop.metrics import METRICS
from rlanything_core.envs.desktop.safe_paths import UnsafePath
from rlanything_core.envs.desktop.task import DesktopTask

__all__ = [
    "Outcome",
    "evaluate_task",
    "run_postconfig",
    "run_steps",
    "score_files",
    "task_downloads",
    "verdict_without_files",
]


@dataclass(frozen=True)
class Outcome:
    """The evaluation of one episode.

    Attributes:
        score: in ``[0, 1]`` (OSWorld's metrics are mostly 0/1).
        metrics: ``(func name, score)`` for each metric that ran, in order.
        error: why the evaluation could not run normally (``""`` when it did).
    """

    score: float
    metrics: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    error: str = ""


def _get(ctx: StepContext, cfg: dict[str, Any]) -> Any:
    return GETTERS[cfg["type"]].get(ctx, cfg)


def evaluate_task(task: DesktopTask, ctx: StepContext, *, last_action: str | None) -> Outcome:
    """Score the episode in this process (module docstring).

    ``last_action`` is ``"DONE"``, ``"FAIL"``, ``"WAIT"`` or ``None``. The environment runs the same three parts
    with the files scored in a limited process instead (:mod:`.checker`).
    """
    early = verdict_without_files(task, last_action)
    if early is not None:
        return early
    return score_files(task, ctx, postconfig_error=run_postconfig(task, ctx))


def verdict_without_files(task: DesktopTask, last_action: str | None) -> Outcome | None:
    """Steps 1-2 of the module docstring: the outcome decided by the last action alone, else ``None``."""
    if task.evaluator["func"] == "infeasible":
        return Outcome(float(last_action == "FAIL"), (("infeasible", float(last_action == "FAIL")),))
    if last_action == "FAIL":
        return Outcome(0.0, error="the agent declared FAIL on a feasible task")
    return None


def run_postconfig(task: DesktopTask, ctx: StepContext) -> str:
    """Step 3: run ``postconfig``; returns the first failure (``""`` when none; scoring goes on, as in OSWorld)."""
    return run_steps(list(task.evaluator.get("postconfig", []) or []), ctx)


def run_steps(steps: list[dict[str, Any]], ctx: StepContext) -> str:
    """Run postconfig ``steps`` in order up to the first failure, which is returned (``""`` when none)."""
    for step in steps:
        try:
            run_step(step, ctx)
        except Exception as exc:  # a failed save still leaves a file to score; OSWorld goes on too
            return f"postconfig {step.get('type')}: {exc}"
    return ""


def task_downloads(task: DesktopTask) -> tuple[tuple[str, str], ...]:
    """``(url, VM path)`` of every file the task's set-up and postconfig download (the harness's copies' sources)."""
    out = []
    for step in [*task.config, *(task.evaluator.get("postconfig", []) or [])]:
        if step.get("type") == "download":
            out += [(f["url"], f["path"]) for f in (step.get("parameters", {}) or {}).get("files", [])]
    return tuple(out)


def score_files(task: DesktopTask, ctx: StepContext, *, postconfig_error: str) -> Outcome:
    """Step 4: read the result and expected states with the getters and run the metrics."""
    ev = task.evaluator
    ctx = dataclasses.replace(ctx, downloads=task_downloads(task))
    single = not isinstance(ev["func"], list)
    funcs = [ev["func"]] if single else list(ev["func"])
    results = [ev["result"]] if single else list(ev["result"])
    expected_cfgs = ev.get("expected")
    expected = [expected_cfgs] if single else list(expected_cfgs or [None] * len(funcs))
    options = [ev.get("options", {}) or {}] if single else list(ev.get("options") or [{}] * len(funcs))
    conj = ev.get("conj", "and")
    scores: list[tuple[str, float]] = []
    for name, result_cfg, expected_cfg, opts in zip(funcs, results, expected, options):
        try:
            result_state = _get(ctx, result_cfg)
        except (FileNotFoundError, UnsafePath) as exc:  # a link or a FIFO in place of the result is no result
            if single or conj == "and":
                return Outcome(0.0, tuple(scores), _join(postconfig_error, f"{name}: {exc}"))
            scores.append((name, 0.0))
            continue
        metric = METRICS[name]
        if expected_cfg:
            value = float(metric(result_state, _get(ctx, expected_cfg), **(opts or {})))
        else:
            value = float(metric(result_state, **(opts or {})))
        scores.append((name, value))
        if not single and conj == "and" and value == 0.0:
            return Outcome(0.0, tuple(scores), postconfig_error)
        if not single and conj == "or" and value == 1.0:
            return Outcome(1.0, tuple(scores), postconfig_error)
    values = [v for _, v in scores]
    if not values:
        return Outcome(0.0, tuple(scores), _join(postconfig_error, "no metric ran"))
    score = values[0] if single else (sum(values) / len(values) if conj == "and" else max(values))
    return Outcome(score, tuple(scores), postconfig_error)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
