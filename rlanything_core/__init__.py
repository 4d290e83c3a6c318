"""rlanything_core: composable primitives for closed-loop RL of LLM agents (RLAnything, Wang et al., 2026).

The flat public surface is loaded lazily (PEP 562): ``import rlanything_core`` is cheap, and
``from rlanything_core import ConsistencyRewardLoss`` imports only what that name needs. Lightning-dependent code
lives in ``rlanything_core.lightning`` and is never imported from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # constants and data model
    "EPS": "rlanything_core.constants",
    "FORMAT_PENALTY": "rlanything_core.constants",
    "StepBatch": "rlanything_core.types",
    "LossOutput": "rlanything_core.types",
    "collate": "rlanything_core.types",
    "Episode": "rlanything_core.records",
    "AgentStep": "rlanything_core.records",
    "JudgeSample": "rlanything_core.records",
    # advantages
    "OutcomeOnlyIntegrator": "rlanything_core.advantages.integrators",
    "IntegratedIntegrator": "rlanything_core.advantages.integrators",
    "StepOnlyIntegrator": "rlanything_core.advantages.integrators",
    "StepReward": "rlanything_core.advantages.step_reward",
    "SingletonRule": "rlanything_core.advantages.functional",
    "TaskBandFilter": "rlanything_core.advantages.filters",
    # rewards
    "consistency_targets": "rlanything_core.rewards.consistency",
    "standardize_votes": "rlanything_core.rewards.consistency",
    "ConsistencyTargets": "rlanything_core.rewards.targets",
    "unit_test_rewards": "rlanything_core.rewards.unit_tests",
    "UnitTestCounts": "rlanything_core.rewards.unit_tests",
    # losses
    "PolicyLoss": "rlanything_core.losses.policy",
    "ConsistencyRewardLoss": "rlanything_core.losses.consistency",
    "Aggregation": "rlanything_core.losses.aggregation",
    "KLEstimator": "rlanything_core.losses.functional",
    "KLReference": "rlanything_core.losses.policy",
    # environment difficulty
    "DifficultyCritic": "rlanything_core.adaptation.difficulty",
    "Direction": "rlanything_core.adaptation.difficulty",
    "accept_rewrite": "rlanything_core.adaptation.difficulty",
    # theory
    "step_precision": "rlanything_core.theory",
    "step_precision_bound": "rlanything_core.theory",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rlanything_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from rlanything_core.adaptation.difficulty import DifficultyCritic, Direction, accept_rewrite
    from rlanything_core.advantages.filters import TaskBandFilter
    from rlanything_core.advantages.functional import SingletonRule
    from rlanything_core.advantages.integrators import IntegratedIntegrator, OutcomeOnlyIntegrator, StepOnlyIntegrator
    from rlanything_core.advantages.step_reward import StepReward
    from rlanything_core.constants import EPS, FORMAT_PENALTY
    from rlanything_core.losses.aggregation import Aggregation
    from rlanything_core.losses.consistency import ConsistencyRewardLoss
    from rlanything_core.losses.functional import KLEstimator
    from rlanything_core.losses.policy import KLReference, PolicyLoss
    from rlanything_core.records import AgentStep, Episode, JudgeSample
    from rlanything_core.rewards.consistency import consistency_targets, standardize_votes
    from rlanything_core.rewards.targets import ConsistencyTargets
    from rlanything_core.rewards.unit_tests import UnitTestCounts, unit_test_rewards
    from rlanything_core.theory import step_precision, step_precision_bound
    from rlanything_core.types import LossOutput, StepBatch, collate
