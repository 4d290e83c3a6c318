"""Loss hyperparameters: NaN and inf are refused at construction, naming the argument (``nan < 0`` is False)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.losses.consistency import ConsistencyRewardLoss
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.testing.strategies import hyperparameter_values, step_batches

# (constructor, argument, the valid range of a finite value)
CASES: list[tuple[Callable[..., Any], str, Callable[[float], bool]]] = [
    (PolicyLoss, "kl_coef", lambda x: x >= 0),
    (PolicyLoss, "clip_eps_high", lambda x: x >= 0),
    (PolicyLoss, "clip_eps_low", lambda x: 0 <= x < 1),
    (PolicyLoss, "log_ratio_clamp", lambda x: x > 0),
    (ConsistencyRewardLoss, "eps", lambda x: x >= 0),
    (ConsistencyRewardLoss, "format_penalty", lambda x: True),
    (ConsistencyRewardLoss, "kl_coef", lambda x: x >= 0),
    (ConsistencyRewardLoss, "clip_eps_high", lambda x: x >= 0),
    (ConsistencyRewardLoss, "log_ratio_clamp", lambda x: x > 0),
]


@pytest.mark.parametrize(("make", "name", "valid"), CASES, ids=[f"{c.__name__}.{n}" for c, n, _ in CASES])
@settings(max_examples=60, deadline=None)
@given(value=hyperparameter_values())
def test_accepted_iff_finite_and_in_range(make: Callable[..., Any], name: str, valid: Callable[[float], bool],
                                          value: float) -> None:
    if math.isfinite(value) and valid(value):
        make(**{name: value})
    else:
        with pytest.raises(ValueError, match=name):
            make(**{name: value})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_the_listed_nan_cases(value: float) -> None:
    for make, name in ((PolicyLoss, "kl_coef"), (PolicyLoss, "clip_eps_high"), (PolicyLoss, "log_ratio_clamp"),
                       (ConsistencyRewardLoss, "eps"), (ConsistencyRewardLoss, "format_penalty")):
        with pytest.raises(ValueError, match=f"^{name}: expected a finite number"):
            make(**{name: value})


@settings(max_examples=50, deadline=None)
@given(batch=step_batches(dtype=torch.float32))
def test_a_batch_with_zero_vote_slots_is_refused(batch: Any) -> None:
    """votes of shape (B, S, 0) used to pass and silently give outcome-only advantages."""
    from rlanything_core.types import StepBatch

    with pytest.raises(ValueError, match="m >= 1"):
        StepBatch(batch.outcome, batch.step_mask, batch.group_index, batch.votes[..., :0],
                  batch.vote_mask[..., :0], batch.vote_valid[..., :0])


@given(st.just(None))
def test_batches_without_votes_stay_valid(_: None) -> None:
    from rlanything_core.types import StepBatch

    StepBatch(torch.ones(2), torch.ones(2, 1, dtype=torch.bool), torch.zeros(2, dtype=torch.int64))
