"""The power of the ablation's design: the smallest paired difference it detects, as pure functions.

The table compares two arms by their paired difference in success: every arm of a training seed plays the same
evaluation episodes (``loop/evaluation.py``), so a unit is a ``(seed, game)`` pair and its value the arm's success on
that game minus the reference's. Two sources of noise reach the mean difference over ``k`` seeds of ``n`` games each:
the units' spread within a seed (``unit_sd``: an episode's paired difference is -1, 0 or +1; the CPU default measured a
standard deviation of 0.37-0.49 per episode on this setting) and the training seeds' own spread of the true difference
(``seed_sd``), so ``Var(mean) = seed_sd^2 / k + unit_sd^2 / (k n)``. A two-sided test at level ``alpha`` detects a
true difference ``delta`` with probability ``power`` when ``delta >= (z_{1-alpha/2} + z_power) * sqrt(Var(mean))``
(the normal approximation; with few seeds and ``seed_sd > 0`` it is optimistic). That ``delta`` is the design's
minimum detectable difference (MDD).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["DesignNoise", "minimum_detectable_difference", "observed_noise"]


def minimum_detectable_difference(
    unit_sd: float, units_per_seed: int, seeds: int, *, seed_sd: float = 0.0, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true mean difference a paired design detects with ``power`` at two-sided level ``alpha``.

    Args:
        unit_sd: standard deviation of one unit's paired difference within a seed (in the difference's units, e.g.
            0.45 for success differences of single episodes), ``>= 0``.
        units_per_seed: paired units (games x runs) per seed, ``>= 1``.
        seeds: training seeds, ``>= 1``.
        seed_sd: standard deviation of the true difference across training seeds, ``>= 0``.
        alpha: the test's two-sided level, in (0, 1).
        power: the probability of detecting the difference, in (0, 1).

    Returns:
        The MDD, in the units of ``unit_sd``.

    Raises:
        ValueError: a value outside its range (named).

    Examples:
        >>> round(minimum_detectable_difference(0.45, 140, 2), 4)
        0.0753
        >>> round(minimum_detectable_difference(0.45, 140, 2, seed_sd=0.03), 4)
        0.096
    """
    for name, value in (("unit_sd", unit_sd), ("seed_sd", seed_sd)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}: expected a finite value >= 0, got {value}")
    for name, count in (("units_per_seed", units_per_seed), ("seeds", seeds)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {count!r}")
    for name, p in (("alpha", alpha), ("power", power)):
        if not 0.0 < p < 1.0:
            raise ValueError(f"{name}: expected in (0, 1), got {p}")
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0) + NormalDist().inv_cdf(power)
    return z * math.sqrt(seed_sd**2 / seeds + unit_sd**2 / (seeds * units_per_seed))


@dataclass(frozen=True)
class DesignNoise:
    """The noise of a finished paired design (see :func:`observed_noise`).

    Attributes:
        unit_sd: pooled within-seed standard deviation of the units' paired differences.
        seed_sd: between-seed standard deviation of the true difference beyond the units' noise (0 with one seed).
        units_per_seed: mean paired units per seed (rounded down, at least 1).
        seeds: seeds seen.
    """

    unit_sd: float
    seed_sd: float
    units_per_seed: int
    seeds: int

    def mdd(self, *, alpha: float = 0.05, power: float = 0.8) -> float:
        """This design's :func:`minimum_detectable_difference` with its measured noise."""
        return minimum_detectable_difference(
            self.unit_sd, self.units_per_seed, self.seeds, seed_sd=self.seed_sd, alpha=alpha, power=power
        )


def observed_noise(arm: Mapping[tuple[int, str], float], reference: Mapping[tuple[int, str], float]) -> DesignNoise:
    """The noise of a finished design, from its paired ``(seed, game)`` values (method of moments).

    ``unit_sd``: the within-seed standard deviation of the differences, pooled over seeds (``n - 1`` per seed).
    ``seed_sd``: ``sqrt(max(0, var(seed means) - unit_sd^2 / n))``, the seeds' spread beyond what their units'
    noise explains (0 with one seed).

    Raises:
        ValueError: units that are not paired, no unit, or a non-finite value.
    """
    if set(arm) != set(reference):
        raise ValueError("arm, reference: not paired (their (seed, game) units differ)")
    if not arm:
        raise ValueError("arm, reference: expected at least one paired unit")
    by_seed: dict[int, list[float]] = {}
    for unit in sorted(arm):
        d = float(arm[unit]) - float(reference[unit])
        if not math.isfinite(d):
            raise ValueError(f"arm, reference: expected finite values, got {arm[unit]} - {reference[unit]} at {unit}")
        by_seed.setdefault(unit[0], []).append(d)
    dof = sum(len(v) - 1 for v in by_seed.values())
    within = sum((x - sum(v) / len(v)) ** 2 for v in by_seed.values() for x in v)
    unit_var = within / dof if dof > 0 else 0.0
    n = max(1, len(arm) // len(by_seed))
    means = [sum(v) / len(v) for v in by_seed.values()]
    seed_var = 0.0
    if len(means) > 1:
        grand = sum(means) / len(means)
        seed_var = max(0.0, sum((m - grand) ** 2 for m in means) / (len(means) - 1) - unit_var / n)
    return DesignNoise(math.sqrt(unit_var), math.sqrt(seed_var), n, len(by_seed))
