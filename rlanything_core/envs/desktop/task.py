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

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.config_steps import check_step
from rlanything_core.envs.desktop.getters import GETTERS
from rlanything_core.envs.desktop.gsettings import default_value
from rlanything_core.envs.desktop.metrics import METRICS, check_metric_options, check_metric_rules
from rlanything_core.envs.desktop.osworld_cache import TaskFiles

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
        cache_dir: the root of the OSWorld-layout file cache its remote files come from (``None``: files shipped
            beside the task; see :mod:`.osworld_cache`).
        cache_key: the id the cache files are kept under when it differs from ``task_id`` (a variant of a task).
        json_path: the file the task was loaded from (``None`` for a task built from a dict).
    """

    task_id: str
    instruction: str
    config: tuple[dict[str, Any], ...]
    evaluator: dict[str, Any]
    task_dir: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    cache_dir: Path | None = None
    cache_key: str = ""
    json_path: Path | None = None

    @property
    def files(self) -> TaskFiles:
        """Where this task's input and gold files come from (cached under the id of the JSON it was loaded from)."""
        return TaskFiles(self.cache_key or self.task_id, self.task_dir, self.cache_dir)

    @property
    def private_paths(self) -> tuple[str, ...]:
        """Folders holding the task's expected files: an agent's code must never read them."""
        return (str(self.task_dir),) + ((str(self.cache_dir),) if self.cache_dir is not None else ())

    @property
    def infeasible(self) -> bool:
        """Whether the evaluator is ``"infeasible"`` (the right answer is ``FAIL``)."""
        return self.evaluator.get("func") == "infeasible"

    def with_instruction(self, instruction: str, *, task_id: str | None = None) -> DesktopTask:
        """The same task (same set-up, same evaluator) with another instruction, e.g. a hint added or removed."""
        raw = {**self.raw, "instruction": instruction, "id": task_id or self.task_id}
        return DesktopTask(
            task_id or self.task_id,
            instruction,
            self.config,
            self.evaluator,
            self.task_dir,
            raw,
            self.cache_dir,
            self.cache_key or self.task_id,
            self.json_path,
        )


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _check_getter(cfg: Any, where: str, files: TaskFiles) -> None:
    if not isinstance(cfg, dict) or not isinstance(cfg.get("type"), str):
        raise UnsupportedTaskError(f"{where} must be a getter dict with a string 'type', got {cfg!r}")
    kind = cfg["type"]
    if kind not in GETTERS:
        raise UnsupportedTaskError(f"{where}: unsupported getter type {kind!r} (supported: {sorted(GETTERS)})")
    try:
        GETTERS[kind].check(cfg, files)
    except ValueError as exc:
        raise UnsupportedTaskError(f"{where}: {exc}") from None


def _check_not_default(name: str, result: dict[str, Any], rules: Any, i: int) -> None:
    """Refuse an ``exact_match`` on a ``gsettings get`` that the untouched episode passes (see :mod:`.gsettings`)."""
    if name != "exact_match" or result.get("type") != "vm_command_line" or not isinstance(rules, dict):
        return
    default = default_value(result["command"])
    if default is not None and default == rules.get("expected"):
        raise UnsupportedTaskError(
            f"evaluator.expected[{i}]: gsettings' default {default!r} already passes the check (OSWorld's VM image "
            "starts from another value, which the task does not record)"
        )


def _check_not_vacuous(name: str, result: dict[str, Any], rules: Any, i: int) -> None:
    """Refuse a ``vm_command_line`` check that a command printing nothing passes.

    Here a command runs in a fresh sandbox: its own pid namespace (no process of the set-up or of the agent is
    listed), no package database, nothing of the VM's system state. A check that passes on empty output (only
    ``exclude`` strings, e.g. ``ps -ef | grep my_process.sh`` must not show the process, ``dpkg -l | grep mahjongg``
    must not list the package) then passes on the untouched episode: it cannot tell done from not done.
    """
    if result.get("type") != "vm_command_line" or name not in METRICS:
        return
    try:
        empty = float(METRICS[name]("", rules))
    except Exception:  # a metric that cannot read empty output does not pass on it
        return
    if empty > 0:
        raise UnsupportedTaskError(
            f"evaluator.expected[{i}]: the check passes when {result['command']!r} prints nothing, as it does here "
            f"on the untouched episode (a fresh sandbox holds none of the VM's processes or packages)"
        )


def _check_evaluator(evaluator: Any, files: TaskFiles) -> None:
    if not isinstance(evaluator, dict):
        raise UnsupportedTaskError(f"'evaluator' must be a dict, got {type(evaluator).__name__}")
    func = evaluator.get("func")
    if func is None:
        raise UnsupportedTaskError("evaluator.func is missing")
    for i, step in enumerate(evaluator.get("postconfig", []) or []):
        check_step(step, f"evaluator.postconfig[{i}]", files, UnsupportedTaskError)
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
        _check_getter(cfg, f"evaluator.result[{i}]", files)
    if evaluator.get("expected") is not None:
        expected = _as_list(evaluator["expected"])
        if len(expected) != len(funcs):
            raise UnsupportedTaskError(f"evaluator has {len(funcs)} funcs but {len(expected)} expected getters")
        for i, (name, cfg) in enumerate(zip(funcs, expected)):
            if cfg:  # OSWorld allows an empty slot in a list of expected getters
                _check_getter(cfg, f"evaluator.expected[{i}]", files)
                if cfg["type"] == "rule":
                    try:
                        check_metric_rules(name, cfg["rules"])
                    except ValueError as exc:
                        raise UnsupportedTaskError(f"evaluator.expected[{i}]: {exc}") from None
                    _check_not_default(name, results[i], cfg["rules"], i)
                    _check_not_vacuous(name, results[i], cfg["rules"], i)
    options = evaluator.get("options", {} if len(funcs) == 1 else [{}] * len(funcs))
    options_list = _as_list(options) if isinstance(func, list) else [options]
    if len(options_list) != len(funcs):
        raise UnsupportedTaskError(f"evaluator has {len(funcs)} funcs but {len(options_list)} option dicts")
    for name, opts in zip(funcs, options_list):
        try:
            check_metric_options(name, opts or {})
        except ValueError as exc:
            raise UnsupportedTaskError(str(exc)) from None


def parse_task(raw: Any, task_dir: str | Path, *, cache_dir: str | Path | None = None) -> DesktopTask:
    """Check a task dict (see the module docstring) and wrap it.

    Args:
        raw: the task's JSON object.
        task_dir: the folder relative file references resolve against.
        cache_dir: the root of an OSWorld-layout file cache (see :mod:`.osworld_cache`); every remote file the task
            downloads or compares with must be there.

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
    cache = Path(cache_dir).resolve() if cache_dir is not None else None
    files = TaskFiles(str(raw["id"]), folder, cache)
    config = raw.get("config", []) or []
    if not isinstance(config, list):
        raise UnsupportedTaskError(f"'config' must be a list, got {type(config).__name__}")
    for i, step in enumerate(config):
        check_step(step, f"config[{i}]", files, UnsupportedTaskError)
    _check_evaluator(raw["evaluator"], files)
    return DesktopTask(str(raw["id"]), raw["instruction"], tuple(config), raw["evaluator"], folder, raw, cache)


def load_task(path: str | Path, *, cache_dir: str | Path | None = None) -> DesktopTask:
    """Read and check one task JSON file (``cache_dir``: see :func:`parse_task`)."""
    file = Path(path)
    try:
        raw = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UnsupportedTaskError(f"cannot read task {file}: {exc}") from None
    return dataclasses.replace(parse_task(raw, file.parent, cache_dir=cache_dir), json_path=file.resolve())
