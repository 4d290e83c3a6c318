"""Environment adaptation: difficulty critic and acceptance rule (more modules: critic feedback, rewriters, pool)."""

from rlanything_core.environment.difficulty import (
    DEFAULT_BAND,
    DifficultyCritic,
    Direction,
    accept_rewrite,
    check_strict_band,
)

__all__ = [
    "DEFAULT_BAND",
    "DifficultyCritic",
    "Direction",
    "accept_rewrite",
    "check_strict_band",
]
