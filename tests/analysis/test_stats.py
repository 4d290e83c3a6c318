"""rlanything_core.analysis.stats: intervals over seeds, the paired bootstrap, curves (property tests)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.analysis.stats import (
    curve,
    mean_ci,
    paired_bootstrap_difference,
    sample_efficiency,
    t_quantile_975,
    unpaired_bootstrap_difference,
)

Curve = tuple[list[float], list[float]]
rates = st.floats(0.0, 1.0, allow_nan=False)


def units(values: list[float], seeds: int = 2) -> dict[tuple[int, str], float]:
    """Spread ``values`` over (seed, game) units."""
    return {(i % seeds, f"game{i // seeds}"): v for i, v in enumerate(values)}


def test_mean_ci_is_a_t_interval() -> None:
    assert mean_ci([0.5]) == (0.5, 0.0)
    mean, half = mean_ci([1.0, 3.0])
    assert mean == 2.0 and math.isclose(half, 12.71 * math.sqrt(2.0) / math.sqrt(2))
    mean, half = mean_ci([2.0, 2.0, 2.0])
    assert mean == 2.0 and half == 0.0
    assert t_quantile_975(2) == 4.30 and t_quantile_975(100) == 1.96
    with pytest.raises(ValueError, match="values"):
        mean_ci([])


@settings(max_examples=40, deadline=None)
@given(st.lists(rates, min_size=1, max_size=40), st.lists(rates, min_size=1, max_size=40), st.integers(0, 10**6))
def test_the_paired_interval_contains_its_estimate(a: list[float], b: list[float], seed: int) -> None:
    n = min(len(a), len(b))
    d = paired_bootstrap_difference(units(a[:n]), units(b[:n]), samples=1000, seed=seed)
    assert d.low - 1e-12 <= d.estimate <= d.high + 1e-12
    assert d.units == n and -1.0 <= d.low <= d.high <= 1.0
    assert d.estimate == pytest.approx(sum(a[:n]) / n - sum(b[:n]) / n)


@settings(max_examples=40, deadline=None)
@given(st.lists(rates, min_size=1, max_size=40), st.integers(0, 10**6))
def test_identical_arms_give_an_interval_containing_zero(a: list[float], seed: int) -> None:
    d = paired_bootstrap_difference(units(a), units(a), samples=500, seed=seed)
    assert d.low <= 0.0 <= d.high and not d.excludes_zero_above


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 0.5), min_size=8, max_size=40), st.floats(0.3, 0.5), st.integers(0, 10**6))
def test_a_large_shift_excludes_zero(base: list[float], shift: float, seed: int) -> None:
    noisy = [v + shift + (0.05 if i % 2 else -0.05) for i, v in enumerate(base)]  # every game better, by 0.25-0.55
    d = paired_bootstrap_difference(units(noisy), units(base), samples=1000, seed=seed)
    assert d.excludes_zero_above and d.low > 0.2
    worse = paired_bootstrap_difference(units(base), units(noisy), samples=1000, seed=seed)
    assert worse.high < 0 and not worse.excludes_zero_above


def test_pairing_separates_what_independent_resampling_cannot() -> None:
    # games from always lost to always won; the arm wins one more run in ten on every game
    reference = [k / 31 * 0.9 for k in range(32)]
    arm = [v + 0.1 for v in reference]
    paired = paired_bootstrap_difference(units(arm), units(reference), samples=4000, seed=0)
    unpaired = unpaired_bootstrap_difference(arm, reference, samples=4000, seed=0)
    assert paired.estimate == pytest.approx(unpaired.estimate) == pytest.approx(0.1)
    assert paired.excludes_zero_above  # the game effects cancel in the paired differences
    assert unpaired.low < 0 < unpaired.high  # the same data, pairing ignored: indistinguishable from 0
    # mispairing (the arm's games shuffled against the reference's) loses it too
    shuffled = dict(zip(sorted(units(arm)), reversed([units(arm)[u] for u in sorted(units(arm))])))
    assert not paired_bootstrap_difference(shuffled, units(reference), samples=4000, seed=0).excludes_zero_above


def test_the_bootstrap_is_deterministic_given_its_seed() -> None:
    a, b = units([0.0, 1.0, 0.5, 1.0, 0.0, 0.0]), units([0.0, 0.0, 0.5, 1.0, 1.0, 0.0])
    first = paired_bootstrap_difference(a, b, samples=300, seed=7)
    assert first == paired_bootstrap_difference(a, b, samples=300, seed=7)
    assert first != paired_bootstrap_difference(a, b, samples=300, seed=8)


def test_unpaired_units_and_bad_arguments_are_refused() -> None:
    a = {(0, "g1"): 1.0, (0, "g2"): 0.0}
    with pytest.raises(ValueError, match=r"not paired.*g2"):
        paired_bootstrap_difference(a, {(0, "g1"): 1.0, (0, "g3"): 0.0})
    with pytest.raises(ValueError, match="at least one"):
        paired_bootstrap_difference({}, {})
    with pytest.raises(ValueError, match="level"):
        paired_bootstrap_difference(a, a, level=1.0)
    with pytest.raises(ValueError, match="samples"):
        paired_bootstrap_difference(a, a, samples=0)
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap_difference({(0, "g"): float("nan")}, {(0, "g"): 0.0})
    with pytest.raises(ValueError, match="at least one"):
        unpaired_bootstrap_difference([], [1.0])


def test_sample_efficiency_is_the_step_ratio_at_which_full_reaches_outcome_only() -> None:
    outcome: list[Curve] = [([10, 20, 30, 40], [0.1, 0.2, 0.3, 0.3])]  # target: mean of the last two = 0.3
    fast: list[Curve] = [([10, 20, 30, 40], [0.3, 0.3, 0.4, 0.5])]  # smoothed over two points: 0.3 at 20 steps
    assert sample_efficiency(fast, outcome) == pytest.approx(20 / 40)
    same = sample_efficiency(outcome, outcome)
    assert same is not None and same <= 1.0
    never: list[Curve] = [([10, 20, 30, 40], [0.0, 0.0, 0.1, 0.1])]
    assert sample_efficiency(never, outcome) is None
    assert sample_efficiency([], outcome) is None
    assert sample_efficiency(fast, [([10, 20], [0.0, 0.0])]) is None  # nothing to reach
    # seeds are averaged before the comparison
    two: list[Curve] = [([10, 20, 30, 40], [0.6, 0.6, 0.6, 0.6]), ([10, 20, 30, 40], [0.0, 0.0, 0.0, 0.0])]
    assert sample_efficiency(two, outcome) == pytest.approx(20 / 40)


def test_coding_curves_count_programs_as_environment_steps() -> None:
    rows = [
        {"rollout/success_rate": 0.5, "rollout/rollouts": 8.0},
        {"rollout/success_rate": 0.25, "rollout/rollouts": 8.0},
    ]
    assert curve(rows) == ([8.0, 16.0], [0.5, 0.25])
    assert curve([{"eval/iteration": 1.0}]) == ([], [])
