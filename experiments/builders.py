"""Build the RLAnything loop of any setting from a Hydra config: validate first (``config_checks``), then wire.

With the modules below, train.py and ablate.py, the only place that reads configs: every object is built here (Hydra
instantiates the ``_target_`` nodes) and handed to the library, which never reads a config. :func:`build` is the one
builder of every setting; what differs between settings is data, the :class:`~experiments.setting.Setting` that
``setting.parts`` names (its tasks, evaluation splits, runners, rewriter, prompts and loop).

- ``setting``: the ``Setting`` and what its parts return; every setting's own parts live in the package
  (``rlanything_core/settings/<name>.py``);
- ``agent_loop``: an agent setting's ``Setting``, driver and evaluator (``settings/coding.py``: the coding loop's);
- ``backends``: models, rollout backends (transformers or vLLM), the run folder;
- ``components``: the judge's loss and targets, selectors, vote samplers, rewriters, the task pool (Hydra-built);
- ``trainer_setup``: Fabric (strategy, precision, loggers), both models' updates, the loop;
- ``env_pools``: shared environment workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.backends import prepare, rollout_backends, rollout_context
from experiments.config_checks import validate
from experiments.setting import LoopParts, Setting
from experiments.trainer_setup import Run, make_loop
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.loop.adaptation import EnvironmentAdaptation

__all__ = ["build"]


def build(cfg: DictConfig) -> Run:
    """Validate ``cfg``, then build its setting's loop (``RLAnythingLoop``).

    The order: the models (seeded), their rollout backends, the setting's tasks and runners, the judge's loss, the
    environment's adaptation, the task pool, the setting's loop (driver and evaluator), the updates and the loop.

    Raises:
        ConfigError: before any work, for a config that cannot work (naming the key and the fix).
    """
    setting = validate(cfg)  # built once, with its own checks and its backends (config_checks.validate)
    run_dir, policy, judge, tokenizer, pad_id = prepare(cfg)
    policy_backend, judge_backend = rollout_backends(cfg, policy, judge, tokenizer)
    tasks = setting.tasks(cfg)
    judge_loss = components.judge_loss(cfg)
    adaptation = _adaptation(cfg, setting, run_dir, judge_backend, tasks.roots)
    pool = components.task_pool(cfg, run_dir, tasks.roots)
    parts = LoopParts(cfg, setting, tasks, policy_backend, judge_backend, judge_loss, pool, adaptation, pad_id)
    driver, evaluator = setting.loop(parts)
    context = rollout_context(cfg, [(policy, policy_backend), (judge, judge_backend)])
    return make_loop(cfg, run_dir, driver, evaluator, policy, judge, judge_loss, context)


def _adaptation(
    cfg: DictConfig, setting: Setting, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]
) -> EnvironmentAdaptation | None:
    """The environment's adaptation where the arm adapts it and the setting's rewriter can run, else ``None``."""
    if not cfg.arm.adapt_environment:
        return None
    rewriter = setting.rewriter(cfg, run_dir, judge_backend, roots)
    if rewriter is None:
        return None
    return EnvironmentAdaptation(rewriter, max_requests=int(cfg.max_rewrites_per_iteration))
