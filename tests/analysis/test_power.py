"""The design's power (rlanything_core.analysis.power) and the seed-level bootstrap (rlanything_core.analysis.stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.analysis.power import minimum_detectable_difference, observed_noise
from rlanything_core.analysis.stats import hierarchical_bootstrap_difference, paired_bootstrap_difference


@settings(max_examples=100, deadline=None)
@given(
    st.floats(0.01, 1.0), st.integers(1, 500), st.integers(1, 10), st.floats(0.0, 0.2),
)  # fmt: skip
def test_the_mdd_shrinks_with_units_and_seeds_and_grows_with_the_seeds_spread(
    sd: float, n: int, k: int, tau: float
) -> None:
    mdd = minimum_detectable_difference(sd, n, k, seed_sd=tau)
    assert mdd == pytest.approx(2.8016 * math.sqrt(tau**2 / k + sd**2 / (k * n)), rel=1e-4)
    assert minimum_detectable_difference(sd, n + 1, k, seed_sd=tau) < mdd
    assert minimum_detectable_difference(sd, n, k + 1, seed_sd=tau) < mdd
    assert minimum_detectable_difference(sd, n, k, seed_sd=tau + 0.01) > mdd
    assert minimum_detectable_difference(sd, n, k, seed_sd=tau, power=0.9) > mdd


def test_a_true_difference_of_one_mdd_is_detected_four_times_in_five() -> None:
    """Simulated designs: 2 seeds x 140 games of paired episodes whose true mean difference is the MDD."""
    rng = np.random.default_rng(0)
    n, k, p_differ = 140, 2, 0.2  # a fifth of the pairs differ (measured on the CPU default: 14-24%)
    sd0 = math.sqrt(p_differ)  # the sd of a -1/0/+1 difference with mean ~0
    delta = minimum_detectable_difference(sd0, n, k)
    # differences: +1 with prob (p_differ + delta) / 2, -1 with (p_differ - delta) / 2, else 0
    up, down = (p_differ + delta) / 2, (p_differ - delta) / 2
    draws = rng.random((4000, k * n))
    d = (draws < up).astype(float) - ((draws >= up) & (draws < up + down)).astype(float)
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(k * n))
    assert float((z > 1.96).mean()) == pytest.approx(0.8, abs=0.03)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"unit_sd": -0.1}, "unit_sd"),
        ({"unit_sd": float("nan")}, "unit_sd"),
        ({"units_per_seed": 0}, "units_per_seed"),
        ({"seeds": 1.5}, "seeds"),
        ({"seed_sd": -1.0}, "seed_sd"),
        ({"alpha": 0.0}, "alpha"),
        ({"power": 1.0}, "power"),
    ],
)
def test_bad_design_values_are_refused_by_name(kwargs: dict[str, float], name: str) -> None:
    args = {"unit_sd": 0.4, "units_per_seed": 100, "seeds": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        minimum_detectable_difference(**args)  # type: ignore[arg-type]


def _simulated(seed_effects: list[float], games: int, sd: float, rng: np.random.Generator) -> tuple[dict, dict]:
    arm = {(s, f"g{g}"): float(e + rng.normal(0, sd)) for s, e in enumerate(seed_effects) for g in range(games)}
    return arm, {u: 0.0 for u in arm}


def test_observed_noise_recovers_the_units_and_the_seeds_spread() -> None:
    rng = np.random.default_rng(1)
    effects = list(rng.normal(0.0, 0.1, size=40))
    noise = observed_noise(*_simulated(effects, 200, 0.4, rng))
    assert noise.unit_sd == pytest.approx(0.4, rel=0.03)
    assert noise.seed_sd == pytest.approx(0.1, rel=0.2)  # 40 seeds: the estimate itself spreads ~12%
    assert (noise.units_per_seed, noise.seeds) == (200, 40)
    one = observed_noise(*_simulated([0.0], 50, 0.4, rng))
    assert one.seed_sd == 0.0 and one.seeds == 1
    assert one.mdd() == pytest.approx(minimum_detectable_difference(one.unit_sd, 50, 1))
    with pytest.raises(ValueError, match="not paired"):
        observed_noise({(0, "a"): 1.0}, {(0, "b"): 1.0})


def test_the_seed_level_bootstrap_counts_the_seeds_spread_that_the_pooled_one_ignores() -> None:
    rng = np.random.default_rng(2)
    arm, ref = _simulated([-0.15, 0.15, -0.1, 0.1], 140, 0.4, rng)
    pooled = paired_bootstrap_difference(arm, ref, samples=4000)
    seeds = hierarchical_bootstrap_difference(arm, ref, samples=4000)
    assert seeds.estimate == pytest.approx(pooled.estimate)
    assert seeds.units == pooled.units == 560
    assert (seeds.high - seeds.low) > 2 * (pooled.high - pooled.low)  # four seeds that disagree: a wide interval
    # no seed spread: wider than the pooled interval, by at most sqrt(2) (both levels resample the games' noise)
    arm, ref = _simulated([0.0, 0.0, 0.0, 0.0], 140, 0.4, rng)
    pooled = paired_bootstrap_difference(arm, ref, samples=4000)
    seeds = hierarchical_bootstrap_difference(arm, ref, samples=4000)
    assert 0.95 < (seeds.high - seeds.low) / (pooled.high - pooled.low) < math.sqrt(2) * 1.1
    assert hierarchical_bootstrap_difference(arm, ref, samples=500, seed=3) == hierarchical_bootstrap_difference(
        arm, ref, samples=500, seed=3
    )
    with pytest.raises(ValueError, match="not paired"):
        hierarchical_bootstrap_difference({(0, "a"): 1.0}, {(0, "b"): 1.0})
    with pytest.raises(ValueError, match="finite"):
        hierarchical_bootstrap_difference({(0, "a"): float("nan")}, {(0, "a"): 1.0})
