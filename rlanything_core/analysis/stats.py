"""The ablation's statistics, as pure functions: intervals over seeds, paired bootstrap over (seed, game), curves.

Why a paired interval: every arm of one seed is evaluated on the same games with the same episode seeds
(``loop/evaluation.py``), so most of the spread between games (some games are easy, some are never won) is shared by
the arms. The difference of two arms on the same (seed, game) removes it; resampling those differences, not each arm
on its own, is what lets a few dozen games separate two arms whose means over seeds overlap (see
:func:`unpaired_bootstrap_difference` for the comparison the tests make).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Curve",
    "PairedDifference",
    "curve",
    "hierarchical_bootstrap_difference",
    "mean_ci",
    "paired_bootstrap_difference",
    "sample_efficiency",
    "t_quantile_975",
    "unpaired_bootstrap_difference",
]

Curve = tuple[list[float], list[float]]
"""``(cumulative environment steps, training success rate)``, one point per iteration."""

# Student's t, 97.5% quantile, by degrees of freedom (1..30); 1.96 (the normal's) beyond.
_T975 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
         2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """Student's t 97.5% quantile for ``df >= 1`` degrees of freedom (two decimals; 1.96 above 30).

    Raises:
        ValueError: ``df < 1``.
    """
    if df < 1:
        raise ValueError(f"df: expected >= 1, got {df}")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of a 95% t-interval (0 for one value).

    Args:
        values: ``(n,)`` one value per seed, ``n >= 1``.

    Raises:
        ValueError: no values.
    """
    n = len(values)
    if n == 0:
        raise ValueError("values: expected at least one value")
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t_quantile_975(n - 1) * sd / math.sqrt(n)


@dataclass(frozen=True)
class PairedDifference:
    """An arm's mean difference from a reference arm with its bootstrap interval.

    Attributes:
        estimate: mean over the units of (arm - reference).
        low: the interval's lower end (the ``(1 - level) / 2`` quantile of the bootstrap means).
        high: its upper end.
        units: how many units (``(seed, game)`` pairs) were paired.
    """

    estimate: float
    low: float
    high: float
    units: int

    @property
    def excludes_zero_above(self) -> bool:
        """The whole interval lies above 0: the arm beats the reference at this level."""
        return self.low > 0.0


def _check_level(level: float, samples: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected in (0, 1), got {level}")
    if samples < 1:
        raise ValueError(f"samples: expected >= 1, got {samples}")


def _paired_units(
    arm: Mapping[tuple[int, str], float], reference: Mapping[tuple[int, str], float]
) -> list[tuple[int, str]]:
    """The units both mappings hold, sorted; a clear error when they are not the same units or there are none."""
    if set(arm) != set(reference):
        only_arm = sorted(set(arm) - set(reference))[:3]
        only_ref = sorted(set(reference) - set(arm))[:3]
        raise ValueError(f"arm, reference: not paired (units only in arm: {only_arm}, only in reference: {only_ref})")
    if not arm:
        raise ValueError("arm, reference: expected at least one paired unit")
    return sorted(arm)


def _interval(means: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def paired_bootstrap_difference(
    arm: Mapping[tuple[int, str], float],
    reference: Mapping[tuple[int, str], float],
    *,
    samples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Mean of ``arm - reference`` over paired units and its percentile-bootstrap interval.

    ``d_u = arm[u] - reference[u]`` for every unit ``u = (seed, game)``; the estimate is ``mean(d)``; the interval
    holds the central ``level`` of ``mean(d[u*])`` over ``samples`` resamples ``u*`` of the units with replacement.

    Args:
        arm: per unit, the arm's value (e.g. the success rate over the game's evaluation runs).
        reference: per unit, the reference arm's value; the same units as ``arm``.
        samples: bootstrap resamples.
        level: the interval's coverage.
        seed: the resampling generator's seed (the same inputs and seed give the same interval).

    Raises:
        ValueError: no units, units that are not paired (the message names some), a non-finite value, or a bad
            ``samples`` / ``level``.
    """
    _check_level(level, samples)
    diffs = np.array([arm[u] - reference[u] for u in _paired_units(arm, reference)], dtype=np.float64)
    if not np.isfinite(diffs).all():
        raise ValueError("arm, reference: expected finite values")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diffs), size=(samples, len(diffs)))
    low, high = _interval(diffs[picks].mean(axis=1), level)
    return PairedDifference(float(diffs.mean()), low, high, len(diffs))


def hierarchical_bootstrap_difference(
    arm: Mapping[tuple[int, str], float],
    reference: Mapping[tuple[int, str], float],
    *,
    samples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Mean of ``arm - reference`` over paired ``(seed, game)`` units, with a two-level (seed, then game) bootstrap.

    Each resample draws the training seeds with replacement, then, within each drawn seed, its games with
    replacement; its statistic is the mean of the drawn differences. Unlike :func:`paired_bootstrap_difference`,
    which pools every ``(seed, game)`` unit as if independent, the seeds' own spread (training runs that differ
    beyond their games' noise) widens the interval: the seed is the unit of replication. With one seed it
    reduces to the games' bootstrap. It is conservative: the drawn seeds' means already carry their games' noise,
    which the second level draws again, so with seeds that do not differ its variance is up to
    ``(2 - 1/k)`` times the pooled one (width up to ``sqrt(2)`` times) for ``k`` seeds.

    Args and raises: as :func:`paired_bootstrap_difference`.
    """
    _check_level(level, samples)
    by_seed: dict[int, list[float]] = {}
    for unit in _paired_units(arm, reference):
        by_seed.setdefault(unit[0], []).append(arm[unit] - reference[unit])
    groups = [np.asarray(v, dtype=np.float64) for _, v in sorted(by_seed.items())]
    if not all(np.isfinite(g).all() for g in groups):
        raise ValueError("arm, reference: expected finite values")
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(groups), size=(samples, len(groups)))
    totals = np.zeros(samples)
    counts = np.zeros(samples)
    for k, g in enumerate(groups):  # every resample's draws of seed k: that many resamples of its games each
        sizes = (picked == k).sum(axis=1) * g.size  # games drawn from seed k in each resample
        draws = g[rng.integers(0, g.size, size=int(sizes.sum()))]
        ends = np.cumsum(sizes)
        sums = np.diff(np.concatenate([[0.0], np.cumsum(draws)])[np.concatenate([[0], ends])])
        totals += sums
        counts += sizes
    low, high = _interval(totals / counts, level)
    every = np.concatenate(groups)
    return PairedDifference(float(every.mean()), low, high, int(every.size))


def unpaired_bootstrap_difference(
    arm: Sequence[float],
    reference: Sequence[float],
    *,
    samples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """``mean(arm) - mean(reference)`` with an interval that resamples each arm on its own (pairing ignored).

    Not used by the table: the baseline that shows what the pairing gains (same signature and output as
    :func:`paired_bootstrap_difference`; ``units`` is the smaller sample size).

    Raises:
        ValueError: an empty arm, a non-finite value, or a bad ``samples`` / ``level``.
    """
    _check_level(level, samples)
    a, b = np.asarray(arm, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("arm, reference: expected at least one value each")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("arm, reference: expected finite values")
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, (samples, a.size))].mean(1) - b[rng.integers(0, b.size, (samples, b.size))].mean(
        1
    )
    low, high = _interval(means, level)
    return PairedDifference(float(a.mean() - b.mean()), low, high, int(min(a.size, b.size)))


def curve(rows: Sequence[Mapping[str, float]]) -> Curve:
    """Cumulative environment steps and training success rate, per iteration (rows of a run's metrics.csv)."""
    steps, success, total = [], [], 0.0
    for r in rows:
        done = r.get("rollout/steps", r.get("rollout/rollouts"))  # coding: one program is one environment step
        if "rollout/success_rate" in r and done is not None:
            total += done
            steps.append(total)
            success.append(r["rollout/success_rate"])
    return steps, success


def _mean_curve(curves: Sequence[Curve]) -> Curve:
    n = min(len(c[0]) for c in curves)
    return (
        [sum(c[0][i] for c in curves) / len(curves) for i in range(n)],
        [sum(c[1][i] for c in curves) / len(curves) for i in range(n)],
    )


def sample_efficiency(full: Sequence[Curve], outcome: Sequence[Curve]) -> float | None:
    """Env steps the full arm needs to reach the outcome-only arm's final training success, over outcome-only's.

    Mean curves over seeds; the last two iterations smooth the target. None if never reached, or if the outcome-only
    arm ends at zero success.
    """
    if not full or not outcome or min(len(c[0]) for c in [*full, *outcome]) < 2:
        return None
    f_steps, f_succ = _mean_curve(full)
    o_steps, o_succ = _mean_curve(outcome)
    target = sum(o_succ[-2:]) / 2
    if target <= 0:  # outcome-only never succeeded: "reaching" it means nothing
        return None
    for i in range(1, len(f_succ)):
        if (f_succ[i - 1] + f_succ[i]) / 2 >= target:
            return f_steps[i] / o_steps[-1]
    return None
