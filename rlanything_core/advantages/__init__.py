"""Policy advantages: integrated feedback, per-step standardization, task difficulty filters."""

from rlanything_core.advantages.filters import JUDGE_BAND, POLICY_BAND, TaskBandFilter, in_band
from rlanything_core.advantages.functional import (
    SingletonRule,
    group_success_rate,
    integrated_step_reward,
    mean_votes,
    outcome_step_reward,
    standardize_per_step,
    step_only_reward,
)
from rlanything_core.advantages.integrators import (
    IntegratedIntegrator,
    Integrator,
    OutcomeOnlyIntegrator,
    StepOnlyIntegrator,
)
from rlanything_core.advantages.step_reward import StepReward

__all__ = [
    "JUDGE_BAND",
    "POLICY_BAND",
    "IntegratedIntegrator",
    "Integrator",
    "OutcomeOnlyIntegrator",
    "SingletonRule",
    "StepOnlyIntegrator",
    "StepReward",
    "TaskBandFilter",
    "group_success_rate",
    "in_band",
    "integrated_step_reward",
    "mean_votes",
    "outcome_step_reward",
    "standardize_per_step",
    "step_only_reward",
]
