"""Task band filters: inclusive edges, agreement with the plain-Python reference."""

from __future__ import annotations

import doctest

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlanything_core.advantages.filters as filters
from rlanything_core.advantages import JUDGE_BAND, POLICY_BAND, TaskBandFilter, in_band
from rlanything_core.testing import plain
from rlanything_core.testing.strategies import step_batches
from rlanything_core.types import StepBatch


def test_doctests() -> None:
    assert doctest.testmod(filters).failed == 0


def test_bands() -> None:
    assert POLICY_BAND == (0.125, 0.875) and JUDGE_BAND == (0.2, 0.8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_edges_inclusive(dtype: torch.dtype) -> None:
    """With 8 rollouts the policy keeps 1..7 successes; with 10 the judge keeps 2..8 (k/n computed, not typed)."""
    eight = torch.arange(9, dtype=dtype) / 8
    assert in_band(eight, POLICY_BAND).tolist() == [False] + [True] * 7 + [False]
    ten = torch.arange(11, dtype=dtype) / 10
    assert in_band(ten, JUDGE_BAND).tolist() == [False, False] + [True] * 7 + [False, False]


@settings(max_examples=60, deadline=None)
@given(batch=step_batches(with_votes=False), band=st.sampled_from([POLICY_BAND, JUDGE_BAND, (0.0, 1.0), (0.5, 0.5)]))
def test_filter_matches_plain(batch: StepBatch, band: tuple[float, float]) -> None:
    rates = plain.group_success_rate(batch.outcome.tolist(), batch.group_index.tolist())
    expected = [plain.in_band(r, band) for r in rates]
    assert TaskBandFilter(band=band)(batch).tolist() == expected


def test_filter_keeps_whole_groups() -> None:
    outcome = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    group = torch.tensor([5, 5, 2, 2, 9, 5, 9])
    batch = StepBatch(outcome, torch.ones(7, 1, dtype=torch.bool), group)
    assert TaskBandFilter(band=JUDGE_BAND)(batch).tolist() == [True, True, False, False, False, True, False]


@pytest.mark.parametrize("band", [(-0.1, 0.5), (0.2, 1.1), (0.8, 0.2), (0.5,), "ab", (float("nan"), 0.5)])
def test_bad_band(band: object) -> None:
    with pytest.raises(ValueError, match="band"):
        TaskBandFilter(band=band)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="band"):
        in_band(torch.tensor([0.5]), band)  # type: ignore[arg-type]


def test_bad_success_rate() -> None:
    for rate in (torch.tensor([1.5]), torch.tensor([-0.1]), torch.tensor([float("nan")]), torch.tensor([1])):
        with pytest.raises(ValueError, match="success_rate"):
            in_band(rate)
    with pytest.raises(ValueError, match="batch"):
        TaskBandFilter()(torch.ones(3))  # type: ignore[arg-type]
