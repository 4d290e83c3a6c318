"""Losses: the clipped policy-gradient objective (policy and judge) and its aggregation modes."""

from rlanything_core.losses.aggregation import Aggregation, aggregate, count_normalizer
from rlanything_core.losses.consistency import ConsistencyRewardLoss
from rlanything_core.losses.functional import (
    KLEstimator,
    broadcast_advantages,
    clip_fractions,
    clipped_policy_objective,
    clipped_surrogate,
    kl_penalty,
    log_ratio,
    overlong_penalty,
)
from rlanything_core.losses.policy import KLReference, PolicyLoss

__all__ = [
    "Aggregation",
    "ConsistencyRewardLoss",
    "KLEstimator",
    "KLReference",
    "PolicyLoss",
    "aggregate",
    "broadcast_advantages",
    "clip_fractions",
    "clipped_policy_objective",
    "clipped_surrogate",
    "count_normalizer",
    "kl_penalty",
    "log_ratio",
    "overlong_penalty",
]
