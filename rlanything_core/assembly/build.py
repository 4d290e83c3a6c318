"""A run from a composed config: :func:`build_run` validates it (``checks.py``), then builds every object of the run.

The only part of the package that reads a run's config: every object is built here (Hydra instantiates the
``_target_`` nodes) and handed to the rest of the library, which never reads a config. :func:`build_run` is the one
builder of every setting; what differs between settings is data, the
:class:`~rlanything_core.assembly.setting.Setting` that ``setting.parts`` names (its tasks, evaluation splits, runners,
rewriter, prompts and loop). The modules of this package:

- ``setting``: the ``Setting`` and what its parts return; every setting's own parts live in
  ``rlanything_core/settings/<name>.py``;
- ``agent``: an agent setting's ``Setting``, driver and evaluator, and the environment workers its runs share;
  ``coding``: the coding loop's;
- ``backends``: models, rollout backends (transformers or vLLM), the run folder; ``memory_plan``: the GPU preflight;
- ``components``: the judge's loss and targets, selectors, vote samplers, rewriters, the task pool (Hydra-built);
- ``trainer``: Fabric (strategy, precision, loggers), both models' updates, the loop (:class:`Run`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.assembly import components
from rlanything_core.assembly.backends import prepare, rollout_backends, rollout_context
from rlanything_core.assembly.checks import validate
from rlanything_core.assembly.setting import LoopParts, Setting
from rlanything_core.assembly.trainer import Run, make_loop
from rlanything_core.loop.adaptation import EnvironmentAdaptation

__all__ = ["build_run"]


def build_run(cfg: DictConfig) -> Run:
    """Validate ``cfg``, then build its setting's loop (``RLAnythingLoop``).

    The order: the models (seeded), their rollout backends, the setting's tasks and runners, the judge's loss, the
    environment's adaptation, the task pool, the setting's loop (driver and evaluator), the updates and the loop.

    Raises:
        ConfigError: before any work, for a config that cannot work (naming the key and the fix).
    """
    setting = validate(cfg)  # built once, with its own checks and its backends (checks.validate)
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
