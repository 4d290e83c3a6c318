"""Build the RLAnything loop from a Hydra config: validate first (``config_checks``), then wire the setting's parts.

With the modules below, train.py and ablate.py, the only place that reads configs: every object is built here (Hydra
instantiates the ``_target_`` nodes) and handed to the library, which never reads a config.

- ``backends``: models, rollout backends (transformers or vLLM), the run folder;
- ``components``: losses, optimizers, integrators, selectors, vote samplers, rewriters, the task pool (Hydra-built);
- ``trainer_setup``: the LightningModule, the strategy, the trainer; ``env_pools``: shared environment workers;
- one module per setting: ``agent_setting`` (ALFWorld, TextWorld), ``coding_setting`` (coding, livebench),
  ``miniwob_setting``, ``desktop_setting``.
"""

from __future__ import annotations

from omegaconf import DictConfig

from experiments.agent_setting import evaluation_episode_seed
from experiments.backends import (
    RANK_VARIABLES,
    is_writer_rank,
    judge_max_new_tokens,
    load_models,
    rollout_backends,
    rollout_context,
    sampling,
)
from experiments.coding_setting import first
from experiments.config_checks import ConfigError, validate
from experiments.env_pools import close_shared_env_pools, shared_env_pool
from experiments.trainer_setup import Run

__all__ = [
    "RANK_VARIABLES",
    "Run",
    "build",
    "close_shared_env_pools",
    "evaluation_episode_seed",
    "first",
    "is_writer_rank",
    "judge_max_new_tokens",
    "load_models",
    "rollout_backends",
    "rollout_context",
    "sampling",
    "shared_env_pool",
]


def build(cfg: DictConfig) -> Run:
    """Validate, then build the module, the data module and the trainer of ``cfg``'s setting."""
    validate(cfg)
    name = cfg.setting.name
    if name in ("alfworld", "textworld"):
        from experiments.agent_setting import build_agent

        return build_agent(cfg)
    if name in ("coding", "livebench"):
        from experiments.coding_setting import build_coding

        return build_coding(cfg)
    if name == "miniwob":  # the GUI setting lives in its own module
        from experiments.miniwob_setting import build_miniwob

        return build_miniwob(cfg)  # type: ignore[no-any-return]
    if name == "desktop":  # OSWorld-format Calc tasks: experiments/desktop_setting.py
        from experiments.desktop_setting import build_desktop

        return build_desktop(cfg)  # type: ignore[no-any-return]
    raise ConfigError(
        "setting",
        f"setting {name!r} has no loop builder yet",
        "use +setting=alfworld, textworld, coding, livebench, miniwob or desktop",
    )
