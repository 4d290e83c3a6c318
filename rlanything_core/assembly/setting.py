"""A setting as data: what a setting's yaml names under ``setting.parts``, built by Hydra.

The yaml is ``rlanything_core/conf/setting/<name>.yaml``. Every setting (ALFWorld, TextWorld, coding, LiveBench,
MiniWoB++, desktop) runs through the one builder, :func:`~rlanything_core.assembly.build.build_run`; a :class:`Setting`
holds only what differs between them, each part a function:

- ``tasks(cfg) -> Tasks``: the pool's root tasks, the evaluation splits and what plays them (environment workers,
  or the coding sandbox), how a pool task becomes an environment's task, the step oracle where there is one;
- ``rewriter(cfg, run_dir, judge_backend, roots)``: the environment's task rewriter (or ``None`` where it cannot
  run, e.g. coding without the judge's LM);
- ``loop(parts) -> (driver, evaluator)``: the agent loop (``agent.agent_loop``) or the coding loop;
- ``agent_prompts`` / ``judge_prompts``: the prompt builders of the policy and the judge (default: the text ones);
- ``validate(cfg)``: the setting's own config checks, run by ``checks.validate`` before any work;
- ``backends``: the rollout backends it runs on; another ``backend.name`` is refused by name, never ignored;
- ``environment``: an agent setting's own parts (an ``AgentTasks`` of ``rlanything_core.settings``), ``None`` else.

A setting's yaml names a function that makes every part above from the setting's own parts (a dataclass of
``rlanything_core.settings`` built from plain values: paths, sizes, seeds, under ``setting.parts.environment``):
``rlanything_core.assembly.agent.agent_setting`` for an agent setting (docs/settings/adding.md),
``rlanything_core.assembly.coding.coding_setting`` for coding.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.collect.prompts import agent_messages, judge_messages
from rlanything_core.config import ConfigError
from rlanything_core.loop.protocol import Evaluator, IterationSource
from rlanything_core.settings import SettingError

__all__ = [
    "BACKENDS",
    "ENVIRONMENT",
    "LoopParts",
    "Setting",
    "Tasks",
    "backend_name",
    "check_parts",
    "check_setting",
    "config_key",
    "load_setting",
]

BACKENDS = ("transformers", "vllm")
"""Every rollout backend (``backend.name``; no ``backend`` group: transformers)."""

ENVIRONMENT = "setting.parts.environment"
"""Where a setting's yaml puts its own parts (a dataclass of ``rlanything_core.settings``; its values interpolate the
setting's keys)."""


@dataclass(frozen=True)
class Tasks:
    """What a setting's ``tasks(cfg)`` returns.

    Attributes:
        roots: the task pool's root tasks.
        splits: the evaluation splits (``EvalSplit`` of the agent settings, ``CodingEvalSplit`` of coding).
        runner: what plays the training tasks: an ``EpisodeRunner`` (environment workers), or the coding sandbox.
        eval_runner: what plays the evaluation tasks (may be ``runner`` itself, e.g. one browser pool).
        to_env_task: a pool task -> what its environment is built from (agent settings; ``None`` for coding).
        oracle: step labels ``oracle(task, actions) -> [+1/-1]`` for the judge's process accuracy, or ``None``.
        step_labeller: the reference agent the step records label every training step with
            (``loop.step_records.StepLabeller``; ALFWorld's hand-coded expert), or ``None``.
    """

    roots: list[TaskSpec]
    splits: list[Any]
    runner: Any
    eval_runner: Any
    to_env_task: Callable[[TaskSpec], Any] | None = None
    oracle: Callable[[Any, list[str]], list[int]] | None = None
    step_labeller: Any = None


@dataclass(frozen=True)
class Setting:
    """The parts of one setting (see the module docstring); built by Hydra from ``setting.parts``."""

    tasks: Callable[[DictConfig], Tasks]
    rewriter: Callable[[DictConfig, Path, Any, list[TaskSpec]], Any]
    loop: Callable[[LoopParts], tuple[IterationSource[Any], Evaluator | None]]
    agent_prompts: Callable[..., Any] = agent_messages
    judge_prompts: Callable[..., Any] = judge_messages
    validate: Callable[[DictConfig], None] | None = None
    backends: tuple[str, ...] = BACKENDS
    environment: Any = None  # an agent setting's AgentTasks (rlanything_core.settings), for its users


@dataclass(frozen=True)
class LoopParts:
    """What ``Setting.loop`` assembles the driver and the evaluator from (built by ``build.build_run``)."""

    cfg: DictConfig
    setting: Setting
    tasks: Tasks
    policy_backend: Any
    judge_backend: Any  # None without a judge
    judge_loss: Any  # None where the arm does not train the judge
    pool: Any  # the TaskPool
    adaptation: Any  # the EnvironmentAdaptation, or None
    pad_id: int


def backend_name(cfg: DictConfig) -> str:
    """``backend.name``, ``transformers`` without a ``backend`` group."""
    return str(OmegaConf.select(cfg, "backend.name", default="transformers"))


def load_setting(cfg: DictConfig) -> Setting:
    """The :class:`Setting` of ``cfg.setting.parts`` (Hydra builds its functions; nothing runs yet).

    Raises:
        ConfigError: the setting names no parts, or they do not build a ``Setting``.
    """
    node = OmegaConf.select(cfg, "setting.parts")
    if node is None:
        name = OmegaConf.select(cfg, "setting.name")
        raise ConfigError(
            "setting.parts",
            f"setting {name!r} names no parts (its tasks, rewriter and loop)",
            "use +setting=alfworld, textworld, coding, livebench, miniwob or desktop, or add setting.parts "
            "(docs/settings/adding.md)",
        )
    try:
        built = instantiate(node, _convert_="all")
    except InstantiationException as err:
        problem = " ".join(str(err).split())[:300]  # Hydra's message spans several lines
        raise ConfigError("setting.parts", problem, "fix the parts (docs/settings/adding.md names them)") from None
    if not isinstance(built, Setting):
        kind = type(built).__name__
        raise ConfigError(
            "setting.parts._target_",
            f"built a {kind}, not a Setting",
            "use rlanything_core.assembly.agent.agent_setting or rlanything_core.assembly.setting.Setting",
        )
    return built


def check_setting(cfg: DictConfig) -> Setting:
    """Build ``cfg``'s setting, refuse a backend it does not run on, run its own checks; return it."""
    setting = load_setting(cfg)
    backend = backend_name(cfg)
    if backend not in setting.backends:
        name = cfg.setting.name
        raise ConfigError(
            "backend",
            f"setting {name!r} runs its rollouts on {list(setting.backends)} only, not {backend!r}",
            f"drop backend={backend} for +setting={name}",
        )
    if setting.validate is not None:
        setting.validate(cfg)
    return setting


def check_parts(cfg: DictConfig, environment: Any) -> None:
    """``environment.check()`` (the setting's own parts), its error named by config key.

    A :class:`SettingError` is re-raised as a ``ConfigError`` naming the config key behind its parameter
    (:func:`config_key`).
    """
    try:
        environment.check()
    except SettingError as err:
        raise ConfigError(config_key(cfg, err.param), err.problem, err.fix) from err


def config_key(cfg: DictConfig, param: str) -> str:
    """The config key behind ``param`` of the environment node.

    ``data_root`` -> ``setting.data_root`` where the yaml says ``data_root: ${setting.data_root}``; ``eval_splits.x`` ->
    ``setting.eval_splits.x``; anything that is no parameter there (``ALFWORLD_DATA``, an environment variable) stays as
    it is.
    """
    head, _, rest = param.partition(".")
    node = OmegaConf.select(cfg, ENVIRONMENT)
    if not isinstance(node, DictConfig) or head not in node:
        return param
    values = OmegaConf.to_container(node, resolve=False)  # the yaml's text: "${setting.data_root}"
    raw = str(values[head]) if isinstance(values, dict) else ""
    found = re.fullmatch(r"\$\{(?:oc\.select:)?([\w.]+)(?:,[^}]*)?\}", raw)
    key = found.group(1) if found else f"{ENVIRONMENT}.{head}"
    return f"{key}.{rest}" if rest else key
