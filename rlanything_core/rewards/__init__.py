"""Rewards for the reward model: consistency feedback for judges, unit-test rewards for the coding setting."""

from rlanything_core.rewards.consistency import consistency_targets, standardize_votes, vote_agreement
from rlanything_core.rewards.pass_fraction import PassFractionIntegrator
from rlanything_core.rewards.targets import ConsistencyTargets, UnitTestTargets

# --- unit-test rewards (rewards/unit_tests.py, another engineer): add its imports here and its names to __all__ ---
from rlanything_core.rewards.unit_tests import (
    UnitTestCounts,
    code_pass_fraction,
    correct_codes,
    standardize_unit_test_rewards,
    unit_test_counts,
    unit_test_rewards,
)

__all__ = [
    "ConsistencyTargets",
    "PassFractionIntegrator",
    "UnitTestTargets",
    "consistency_targets",
    "standardize_votes",
    "vote_agreement",
    # unit-test rewards
    "UnitTestCounts",
    "code_pass_fraction",
    "correct_codes",
    "standardize_unit_test_rewards",
    "unit_test_counts",
    "unit_test_rewards",
]
