"""OSWorld task JSON: load, check against the locally runnable subset, refuse the rest by name.

The format (OSWorld's ``evaluation_examples``): ``{id, snapshot, instruction, source, config: [{type, parameters}],
related_apps, evaluator: {postconfig, func, result, expected, options, conj}}``. ``func`` is a metric name or a list
combined by ``conj`` (``"and"`` by default); ``result``/``expected`` are getter configs (one per metric when ``func``
is a list); ``func: "infeasible"`` marks a task the agent should decline with ``FAIL``.

What runs here is decided once, at load: a config step type, getter type, metric, ``compare_table`` rule, or launch
command outside the subset raises :class:`UnsupportedTaskError` naming it, so no episode starts on a task that could
only fail later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.config_steps import check_step
from rlanything_core.envs.desktop.getters import GETTERS
from rlanything_core.envs.desktop.metrics import METRICS, check_metric_options

__all__ = ["DesktopTask", "UnsupportedTaskError", "load_task", "parse_task"]


class UnsupportedTaskError(ValueError):
    """The task needs a piece (config type, getter, metric, rule, program) this interpreter does not run."""


@dataclass(frozen=True)
class DesktopTask:
    """One OSWorld-format task.

    Attributes:
        task_id: the JSON's ``id``.
        instruction: what the agent is asked to do.
        config: the set-up steps, in order.
        evaluator: the evaluator dict as given.
        task_dir: the folder of the JSON (relative file references resolve against it).
        raw: the whole JSON object.
    """

    task_id: str
    instruction: str
    config: tuple[dict[str, Any], ...]
    evaluator: dict[str, Any]
    task_dir: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def infeasible(self) -> bool:
        """Whether the evaluator is ``"infeasible"`` (the right answer is ``FAIL``)."""
        return self.evaluator.get("func") == "infeasible"

    def with_instruction(self, instruction: str, *, task_id: str | None = None) -> DesktopTask:
        """The same task (same set-up, same evaluator) with another instruction, e.g. a hint added or removed."""
        raw = {**self.raw, "instruction": instruction, "id": task_id or self.task_id}
        return DesktopTask(task_id or self.task_id, instruction, self.config, self.evaluator, self.task_dir, raw)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _check_getter(cfg: Any, where: str, task_dir: Path) -> None:
    if not isinstance(cfg, dict) or not isinstance(cfg.get("type"), str):
        raise UnsupportedTaskError(f"{where} must be a getter dict with a string 'type', got {cfg!r}")
    kind = cfg["type"]
    if kind not in GETTERS:
        raise UnsupportedTaskError(f"{where}: unsupported getter type {kind!r} (supported: {sorted(GETTERS)})")
    try:
        GETTERS[kind].check(cfg, task_dir)
    except ValueError as exc:
        raise UnsupportedTaskError(f"{where}: {exc}") from None


def _check_evaluator(evaluator: Any, task_dir: Path) -> None:
    if not isinstance(evaluator, dict):
        raise UnsupportedTaskError(f"'evaluator' must be a dict, got {type(evaluator).__name__}")
    func = evaluator.get("func")
    if func is None:
        raise UnsupportedTaskError("evaluator.func is missing")
    for i, step in enumerate(evaluator.get("postconfig", []) or []):
        check_step(step, f"evaluator.postconfig[{i}]", task_dir, UnsupportedTaskError)
    if func == "infeasible":
        return
    funcs = _as_list(func)
    for name in funcs:
        if not isinstance(name, str) or name not in METRICS:
            raise UnsupportedTaskError(f"unsupported evaluator func {name!r} (supported: {sorted(METRICS)})")
    conj = evaluator.get("conj", "and")
    if conj not in ("and", "or"):
        raise UnsupportedTaskError(f"evaluator.conj must be 'and' or 'or', got {conj!r}")
    results = _as_list(evaluator.get("result"))
    if len(results) != len(funcs):
        raise UnsupportedTaskError(f"evaluator has {len(funcs)} funcs but {len(results)} result getters")
    for i, cfg in enumerate(results):
        _check_getter(cfg, f"evaluator.result[{i}]", task_dir)
    if evaluator.get("expected") is not None:
        expected = _as_list(evaluator["expected"])
        if len(expected) != len(funcs):
            raise UnsupportedTaskError(f"evaluator has {len(funcs)} funcs but {len(expected)} expected getters")
        for i, cfg in enumerate(expected):
            if cfg:  # OSWorld allows an empty slot in a list of expected getters
                _check_getter(cfg, f"evaluator.expected[{i}]", task_dir)
    options = evaluator.get("options", {} if len(funcs) == 1 else [{}] * len(funcs))
    options_list = _as_list(options) if isinstance(func, list) else [options]
    if len(options_list) != len(funcs):
        raise UnsupportedTaskError(f"evaluator has {len(funcs)} funcs but {len(options_list)} option dicts")
    for name, opts in zip(funcs, options_list):
        try:
            check_metric_options(name, opts or {})
        except ValueError as exc:
            raise UnsupportedTaskError(str(exc)) from None


def parse_task(raw: Any, task_dir: str | Path) -> DesktopTask:
    """Check a task dict (see the module docstring) and wrap it.

    Raises:
        UnsupportedTaskError: a missing field, or a piece outside the local subset (named in the message).
    """
    if not isinstance(raw, dict):
        raise UnsupportedTaskError(f"a task is a JSON object, got {type(raw).__name__}")
    for key in ("id", "instruction", "evaluator"):
        if key not in raw:
            raise UnsupportedTaskError(f"task is missing {key!r}")
    if not isinstance(raw["instruction"], str) or not raw["instruction"].strip():
        raise UnsupportedTaskError("'instruction' must be a non-empty string")
    folder = Path(task_dir).resolve()
    config = raw.get("config", []) or []
    if not isinstance(config, list):
        raise UnsupportedTaskError(f"'config' must be a list, got {type(config).__name__}")
    for i, step in enumerate(config):
        check_step(step, f"config[{i}]", folder, UnsupportedTaskError)
    _check_evaluator(raw["evaluator"], folder)
    return DesktopTask(str(raw["id"]), raw["instruction"], tuple(config), raw["evaluator"], folder, raw)


def load_task(path: str | Path) -> DesktopTask:
    """Read and check one task JSON file."""
    file = Path(path)
    try:
        raw = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UnsupportedTaskError(f"cannot read task {file}: {exc}") from None
    return parse_task(raw, file.parent)
