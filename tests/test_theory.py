"""Theorems 1 and 2 (arXiv 2602.02488, properties T1a-T1d, T2a-T2c): exact values, bounds, limits, identity."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.theory import (
    consistency_reward,
    importance_weights,
    step_precision,
    step_precision_bound,
    theorem2_sides,
    weight_norm_ratio,
)


def exact_precision(a_plus: int, a_minus: int, m: int, denom: int = 20) -> Fraction:
    """A = P(K+ > K-) with p_plus = a_plus/denom, p_minus = a_minus/denom, in exact integer arithmetic."""
    q = denom - a_minus  # P(vote = +1 | failure) = 1 - p_minus = q / denom
    plus = [math.comb(m, k) * a_plus**k * (denom - a_plus) ** (m - k) for k in range(m + 1)]
    minus = [math.comb(m, k) * q**k * (denom - q) ** (m - k) for k in range(m + 1)]
    total, below = 0, 0
    for k in range(m + 1):
        total += plus[k] * below
        below += minus[k]
    return Fraction(total, denom ** (2 * m))


@pytest.mark.parametrize("a_plus,a_minus", [(12, 12), (9, 10), (10, 10), (18, 4), (0, 20), (20, 20), (3, 19)])
@pytest.mark.parametrize("m", [1, 2, 7, 40, 129, 512])
def test_step_precision_is_exact(a_plus: int, a_minus: int, m: int) -> None:
    got = float(step_precision(a_plus / 20, a_minus / 20, m))
    want = float(exact_precision(a_plus, a_minus, m))
    assert got == pytest.approx(want, abs=1e-12, rel=1e-10)


def test_t1b_t1c_reference_values() -> None:
    values = [float(step_precision(0.6, 0.6, m)) for m in (1, 3, 5, 16, 64)]
    assert [round(v, 2) for v in values] == [0.36, 0.54, 0.63, 0.84, 0.99]
    assert float(step_precision(0.45, 0.5, 256)) == pytest.approx(0.12, abs=0.005)
    assert float(step_precision(0.5, 0.5, 256)) == pytest.approx(0.48, abs=0.005)


def test_t1a_bound_on_grid() -> None:
    grid = torch.linspace(0, 1, 21, dtype=torch.float64)
    pp, pm = torch.meshgrid(grid, grid, indexing="ij")
    above = (pp + pm) > 1 + 1e-12
    for m in range(1, 129):
        exact = step_precision(pp[above], pm[above], m)
        bound = step_precision_bound(pp[above], pm[above], m)
        assert bool((exact >= bound - 1e-12).all()), m


@settings(max_examples=300, deadline=None)
@given(p_plus=st.floats(0, 1), p_minus=st.floats(0, 1), m=st.integers(1, 128))
def test_t1a_bound_hypothesis(p_plus: float, p_minus: float, m: int) -> None:
    a = float(step_precision(p_plus, p_minus, m))
    assert 0.0 <= a <= 1.0
    if p_plus + p_minus > 1:
        assert a >= float(step_precision_bound(p_plus, p_minus, m)) - 1e-12


@pytest.mark.parametrize("p_plus,p_minus", [(0.6, 0.6), (0.9, 0.2), (0.55, 0.5), (1.0, 0.05)])
def test_limit_is_one_above_mu_one(p_plus: float, p_minus: float) -> None:
    # T1b, T1d: mu > 1 -> A(m) -> 1, whatever the split of mu between p_plus and p_minus.
    assert float(step_precision(p_plus, p_minus, 4096)) > 0.99


@pytest.mark.parametrize("p_plus,p_minus", [(0.45, 0.5), (0.3, 0.6), (0.9, 0.05)])
def test_limit_is_zero_below_mu_one(p_plus: float, p_minus: float) -> None:
    a = [float(step_precision(p_plus, p_minus, m)) for m in (256, 1024, 4096)]
    assert a[0] > a[1] > a[2] and a[2] < 0.01


@pytest.mark.parametrize("p", [0.5, 0.2, 0.9])
def test_limit_is_one_half_at_mu_one(p: float) -> None:
    # mu = 1: both trajectories' votes have the same law; A = (1 - P(tie)) / 2 -> 1/2 from below, never 1.
    a = [float(step_precision(p, 1 - p, m)) for m in (16, 256, 4096)]
    assert a[0] < a[1] < a[2] < 0.5
    assert a[2] > 0.49


def test_theorem1_validation() -> None:
    with pytest.raises(ValueError, match="p_plus \\+ p_minus"):
        step_precision_bound(0.5, 0.5, 4)
    with pytest.raises(ValueError, match="p_plus"):
        step_precision(1.2, 0.5, 4)
    with pytest.raises(ValueError, match="p_minus"):
        step_precision(0.5, float("nan"), 4)
    for bad_m in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="m"):
            step_precision(0.6, 0.6, bad_m)  # type: ignore[arg-type]


def plain_theorem2(
    outcome: list[int], mean_vote: list[Fraction], p: list[Fraction], lam: Fraction
) -> tuple[Fraction, Fraction]:
    n = len(outcome)
    lhs = sum(((o + lam * s) * (2 * q - 1) for o, s, q in zip(outcome, mean_vote, p)), Fraction(0)) / n
    inner = Fraction(0)
    for o, s, q in zip(outcome, mean_vote, p):
        if o == 1:
            inner += q * (1 + lam * s) / 2
        else:
            inner += (1 - q) * (1 - lam * s) / 2
    const = sum((-o * (o + lam * s) for o, s in zip(outcome, mean_vote)), Fraction(0)) / n
    return lhs, 4 * inner / n + const


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from([-1, 1]), st.integers(-3, 3), st.integers(0, 8)), min_size=1, max_size=30),
    lam=st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(3, 2), Fraction(0)]),
)
def test_t2a_identity_exact(rows: list[tuple[int, int, int]], lam: Fraction) -> None:
    outcome = [o for o, _, _ in rows]
    mean_vote = [Fraction(s, 3) for _, s, _ in rows]  # m = 3 votes
    p = [Fraction(q, 8) for _, _, q in rows]
    lhs, rhs = plain_theorem2(outcome, mean_vote, p, lam)
    assert lhs == rhs  # the identity holds exactly in rational arithmetic
    sides = theorem2_sides(
        torch.tensor(outcome, dtype=torch.float64),
        torch.tensor([float(s) for s in mean_vote], dtype=torch.float64),
        torch.tensor([float(q) for q in p], dtype=torch.float64),
        lam=float(lam),
    )
    assert float(sides.lhs) == pytest.approx(float(lhs), abs=1e-12)
    assert float(sides.rhs) == pytest.approx(float(rhs), abs=1e-12)
    assert float(sides.lhs) == pytest.approx(float(sides.rhs), abs=1e-12)


def test_t2a_constant_does_not_depend_on_the_judge() -> None:
    g = torch.Generator().manual_seed(0)
    outcome = torch.where(torch.rand(50, generator=g) < 0.4, 1.0, -1.0).double()
    mean_vote = (torch.randint(-3, 4, (50,), generator=g) / 3).double()
    a = theorem2_sides(outcome, mean_vote, torch.rand(50, generator=g, dtype=torch.float64))
    b = theorem2_sides(outcome, mean_vote, torch.rand(50, generator=g, dtype=torch.float64))
    assert torch.equal(a.constant, b.constant)
    assert not torch.equal(a.lhs, b.lhs)


@settings(max_examples=200, deadline=None)
@given(o=st.sampled_from([-1.0, 1.0]), s=st.floats(-1, 1))
def test_t2b_weights_in_unit_interval_at_lam_one(o: float, s: float) -> None:
    f_plus, f_minus = importance_weights(torch.tensor([o]), torch.tensor([s]))
    for f in (f_plus, f_minus):
        assert bool(((f >= 0) & (f <= 1)).all())
    assert float(f_plus if o == -1 else f_minus) == 0.0  # the other weight is switched off


@pytest.mark.parametrize("lam", [1.5, 2.0, 3.0])
def test_t2b_nonnegativity_fails_above_lam_one(lam: float) -> None:
    f_plus, f_minus = importance_weights(torch.tensor([1.0, -1.0]), torch.tensor([-1.0, 1.0]), lam=lam)
    assert float(f_plus[0]) < 0 and float(f_minus[1]) < 0
    # ... and the step reward then contradicts the outcome (R = O + lam s has the opposite sign).
    r = consistency_reward(torch.tensor([1.0]), torch.tensor([-1.0]), torch.tensor([1.0]), lam=lam)
    assert float(r) < 0


def test_t2c_weight_norm_ratio_tracks_success_probability() -> None:
    n = 2000
    g = torch.Generator().manual_seed(1)
    mean_vote = torch.rand(n, generator=g, dtype=torch.float64) - 0.5  # bounded away from +-1
    ratios = []
    for rho in (0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999):
        successes = round(rho * n)
        outcome = torch.cat([torch.ones(successes), -torch.ones(n - successes)]).double()
        f_plus, f_minus = importance_weights(outcome, mean_vote)
        ratio = weight_norm_ratio(f_plus, f_minus)
        scale = math.sqrt(successes / (n - successes))
        assert scale / 3 <= ratio <= 3 * scale  # f in [1/4, 3/4] when |s| <= 1/2
        ratios.append(ratio)
    assert ratios == sorted(ratios) and ratios[0] < 0.1 and ratios[-1] > 10
    assert weight_norm_ratio(torch.ones(3), torch.zeros(3)) == math.inf


def test_theorem2_validation() -> None:
    with pytest.raises(ValueError, match="outcome"):
        importance_weights(torch.tensor([0.5]), torch.tensor([0.0]))
    with pytest.raises(ValueError, match="mean_vote"):
        importance_weights(torch.tensor([1.0]), torch.tensor([1.5]))
    with pytest.raises(ValueError, match="p"):
        theorem2_sides(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([1.5]))
