"""A success rate ON a band edge is inside the (inclusive) band, whatever dtype the outcomes or rates came in."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.adaptation.difficulty import DifficultyCritic, Direction, accept_rewrite
from rlanything_core.advantages.filters import TaskBandFilter
from rlanything_core.collect.coding import CodeSample
from rlanything_core.loop.coding_rows import score_task
from rlanything_core.testing.strategies import BANDS, FLOAT_DTYPES, band_edge_groups
from rlanything_core.types import StepBatch


def _batch(groups: list[tuple[int, int]], dtype: torch.dtype) -> StepBatch:
    outcome = [1.0 if i < k else -1.0 for k, n in groups for i in range(n)]
    index = [g for g, (_, n) in enumerate(groups) for _ in range(n)]
    b = len(outcome)
    return StepBatch(torch.tensor(outcome, dtype=dtype), torch.ones(b, 1, dtype=torch.bool), torch.tensor(index))


@settings(max_examples=300, deadline=None)
@given(groups=band_edge_groups(), band=st.sampled_from(BANDS), dtype=st.sampled_from(FLOAT_DTYPES))
def test_band_filter_matches_counts(groups: list[tuple[int, int]], band: tuple[float, float],
                                    dtype: torch.dtype) -> None:
    """Reference: ``low <= k / n <= high`` in Python floats (float64), per group."""
    keep = TaskBandFilter(band=band)(_batch(groups, dtype))
    expected = [band[0] <= k / n <= band[1] for k, n in groups for _ in range(n)]
    assert keep.tolist() == expected


def test_four_of_five_is_inside_the_judge_band_with_float32_outcomes() -> None:
    keep = TaskBandFilter(band=(0.2, 0.8))(_batch([(4, 5), (1, 5), (5, 5)], torch.float32))
    assert keep.tolist() == [True] * 10 + [False] * 5


@settings(max_examples=200, deadline=None)
@given(groups=band_edge_groups(max_groups=1, max_group_size=16), band=st.sampled_from(BANDS))
def test_coding_pass_all_rate_is_exact(groups: list[tuple[int, int]], band: tuple[float, float]) -> None:
    """The coding driver's pass-all rate (which meets the policy band) is ``k/n`` exactly, as a Python float."""
    ((k, n),) = groups
    task = SimpleNamespace(tests=[object(), object()])  # score_task reads only the number of GT tests here
    programs = [CodeSample(f"t{i}", 0, [], [], [], "", "x", gt_passed=[i < k, True]) for i in range(n)]
    res = score_task(task, programs, [])  # type: ignore[arg-type]
    assert res.pass_all_rate == k / n
    assert (band[0] <= res.pass_all_rate <= band[1]) == (band[0] <= k / n <= band[1])


def _f32(rate: float) -> float:
    return float(torch.tensor(rate, dtype=torch.float32))


@settings(max_examples=300, deadline=None)
@given(groups=band_edge_groups(max_groups=2), band=st.sampled_from([b for b in BANDS if b[0] < b[1]]))
def test_difficulty_decisions_ignore_float32_rounding(groups: list[tuple[int, int]],
                                                      band: tuple[float, float]) -> None:
    critic = DifficultyCritic(band=band)
    rates = [k / n for k, n in groups]
    assert [critic.direction(_f32(r)) for r in rates] == [critic.direction(r) for r in rates]
    if len(rates) == 2:
        for direction in (Direction.HARDER, Direction.EASIER):
            exact = accept_rewrite(direction, rates[0], rates[1], band=band)
            assert accept_rewrite(direction, _f32(rates[0]), _f32(rates[1]), band=band) == exact


def test_one_fifth_in_float32_is_on_the_low_edge() -> None:
    critic = DifficultyCritic(band=(0.2, 0.8))
    assert critic.direction(_f32(1 / 5)) is Direction.EASIER and critic.direction(_f32(4 / 5)) is Direction.HARDER
    assert not accept_rewrite(Direction.HARDER, 1.0, _f32(0.2), band=(0.2, 0.8))  # strict: low < acc'
