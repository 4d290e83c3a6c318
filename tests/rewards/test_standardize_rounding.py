"""standardize_unit_test_rewards: equal rewards give 0 at any size and dtype; NaN rewards and bad eps are refused."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.rewards.unit_tests import code_pass_fraction, standardize_unit_test_rewards, unit_test_rewards
from rlanything_core.testing.strategies import equal_reward_rows, hyperparameter_values


def test_seven_codes_passing_one_third_standardize_to_zero() -> None:
    fraction = code_pass_fraction(torch.tensor([[True, False, False]] * 7))
    assert fraction.dtype == torch.float32
    assert standardize_unit_test_rewards(fraction).tolist() == [0.0] * 7


@settings(max_examples=400, deadline=None)
@given(row=equal_reward_rows())
def test_equal_rewards_standardize_to_zero(row: tuple[torch.Tensor, float]) -> None:
    rewards, _ = row
    out = standardize_unit_test_rewards(rewards)
    assert out.dtype == rewards.dtype and not bool(out.any())


@settings(max_examples=200, deadline=None)
@given(row=equal_reward_rows(max_size=12), pad=st.integers(1, 5),
       fill=st.sampled_from([float("nan"), float("inf"), -7.0]))
def test_equal_rewards_with_padding_standardize_to_zero(row: tuple[torch.Tensor, float], pad: int,
                                                        fill: float) -> None:
    rewards, _ = row
    padded = torch.cat([rewards, torch.full((pad,), fill, dtype=rewards.dtype)])
    mask = torch.arange(len(padded)) < len(rewards)
    assert not bool(standardize_unit_test_rewards(padded, mask).any())


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-6, 6), min_size=2, max_size=40).filter(lambda v: len(set(v)) > 1),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_distinct_rewards_still_standardize(values: list[int], dtype: torch.dtype) -> None:
    out = standardize_unit_test_rewards(torch.tensor(values, dtype=dtype)).double()
    assert abs(float(out.mean())) < 1e-5 and abs(float(out.pow(2).mean()) - 1.0) < 1e-4


def test_nan_rewards_and_bad_eps_are_refused() -> None:
    with pytest.raises(ValueError, match="rewards: non-finite"):
        standardize_unit_test_rewards(torch.tensor([1.0, float("nan"), 0.0]))
    with pytest.raises(ValueError, match="rewards: non-finite"):
        standardize_unit_test_rewards(torch.tensor([1.0, float("inf")]))
    for eps in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="eps"):
            standardize_unit_test_rewards(torch.tensor([1.0, 0.0]), eps=eps)


@settings(max_examples=200, deadline=None)
@given(penalty=hyperparameter_values(), strictly_lowest=st.booleans())
def test_unit_test_format_penalty_must_be_finite(penalty: float, strictly_lowest: bool) -> None:
    gt, gen, parsed = torch.tensor([[True], [False]]), torch.tensor([[True], [False]]), torch.tensor([False])
    if penalty == penalty and abs(penalty) <= torch.finfo(torch.float32).max:
        out = unit_test_rewards(gt, gen, parsed, format_penalty=penalty, strictly_lowest=strictly_lowest)
        assert out is not None and bool(torch.isfinite(out).all())
    else:
        with pytest.raises(ValueError, match="format_penalty"):
            unit_test_rewards(gt, gen, parsed, format_penalty=penalty, strictly_lowest=strictly_lowest)
