"""ALFWorld's training pool as ``experiments/ablate.py`` records it in a run's metadata.

ALFWorld's parts live in the package (``rlanything_core/settings/alfworld.py``) and its yaml names them; this module
only reads the pool of a config's setting.
"""

from __future__ import annotations

from omegaconf import DictConfig

from experiments.agent_loop import check_environment
from experiments.setting import load_setting
from rlanything_core.config import ConfigError
from rlanything_core.envs.alfworld.data import AlfworldGame
from rlanything_core.settings.alfworld import AlfworldTasks, training_pool_summary

__all__ = ["alfworld_games", "training_pool_summary"]


def alfworld_games(cfg: DictConfig) -> tuple[list[AlfworldGame], dict[str, list[AlfworldGame]], object]:
    """``(training games, evaluation games per split, data root)`` of ``cfg``'s ALFWorld setting.

    Raises:
        ConfigError: ``cfg``'s setting is not ALFWorld, or its checks fail (naming the key).
    """
    environment = load_setting(cfg).environment
    if not isinstance(environment, AlfworldTasks):
        raise ConfigError("setting.parts.environment", "this setting is not ALFWorld", "use +setting=alfworld")
    check_environment(cfg, environment)
    return environment.games()
