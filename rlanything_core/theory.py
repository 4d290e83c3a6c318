"""Theorems 1 and 2 of the paper as functions (arXiv 2602.02488), for property tests, tutorials and sizing ``m``.

Theorem 1: with ``m`` i.i.d. judge votes per step, ``p_plus = P(vote = +1 | step of a success)`` and
``p_minus = P(vote = -1 | step of a failure)``, the precision ``A = P(mean vote on tau+ > mean vote on tau-)`` tends to
1 iff ``mu = p_plus + p_minus > 1``, and ``A >= 1 - exp(-m (mu - 1)^2 / 4)`` then.

Theorem 2 (lam = 1): the judge's expected consistency reward equals ``4 (<p+, f+> + <p-, f->) + C`` with nonnegative
importance weights ``f+ = 1{O=1}(1 + s)/2``, ``f- = 1{O=-1}(1 - s)/2`` and ``C = -E[O R]`` independent of the judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core._validation import check_positive_int

__all__ = [
    "Theorem2Sides",
    "consistency_reward",
    "importance_weights",
    "step_precision",
    "step_precision_bound",
    "theorem2_sides",
    "weight_norm_ratio",
]


def _probability(name: str, value: float | Tensor) -> Tensor:
    p = torch.as_tensor(value, dtype=torch.float64)
    if not bool(torch.isfinite(p).all()) or bool(((p < 0) | (p > 1)).any()):
        raise ValueError(f"{name}: expected probabilities in [0, 1], got {value!r}")
    return p


def _binomial_pmf(m: int, p: Tensor) -> Tensor:
    """``(..., m + 1)`` float64 pmf of ``Bin(m, p)``, via log-space (exact to float64 rounding for large m)."""
    k = torch.arange(m + 1, dtype=torch.float64)
    log_comb = torch.lgamma(torch.tensor(m + 1.0, dtype=torch.float64)) - torch.lgamma(k + 1) - torch.lgamma(m - k + 1)
    p = p.unsqueeze(-1)
    log_pmf: Tensor = log_comb + torch.special.xlogy(k, p) + torch.special.xlogy(m - k, 1 - p)
    return log_pmf.exp()


def step_precision(p_plus: float | Tensor, p_minus: float | Tensor, m: int) -> Tensor:
    """Exact ``A(m) = P(K+ > K-)``, ``K+ ~ Bin(m, p_plus)``, ``K- ~ Bin(m, 1 - p_minus)``; ties are failures.

    ``K+`` counts the +1 votes on a step of a successful trajectory, ``K-`` those on a step of a failed one; the mean
    votes compare as the counts do.

    Args:
        p_plus: probability in ``[0, 1]`` (float or tensor; tensors broadcast).
        p_minus: probability in ``[0, 1]``.
        m: number of votes per step, integer >= 1.

    Returns:
        float64 tensor of the broadcast shape (0-d for floats).

    Examples:
        >>> round(float(step_precision(0.6, 0.6, 1)), 4), round(float(step_precision(0.6, 0.6, 64)), 2)
        (0.36, 0.99)
    """
    check_positive_int("m", m)
    pp, pm = torch.broadcast_tensors(_probability("p_plus", p_plus), _probability("p_minus", p_minus))
    pmf_plus = _binomial_pmf(m, pp)
    pmf_minus = _binomial_pmf(m, 1 - pm)
    # P(K- < k) for k = 0..m: exclusive cumulative sum.
    below = torch.cumsum(pmf_minus, dim=-1) - pmf_minus
    return (pmf_plus * below).sum(dim=-1).clamp(0.0, 1.0)


def step_precision_bound(p_plus: float | Tensor, p_minus: float | Tensor, m: int) -> Tensor:
    """Theorem 1's lower bound ``1 - exp(-m (mu - 1)^2 / 4)``, ``mu = p_plus + p_minus > 1``.

    Args:
        p_plus: probability in ``[0, 1]``.
        p_minus: probability in ``[0, 1]``; every ``p_plus + p_minus`` must exceed 1.
        m: integer >= 1.

    Returns:
        float64 tensor.

    Examples:
        >>> round(float(step_precision_bound(0.6, 0.6, 64)), 4)
        0.4727
    """
    check_positive_int("m", m)
    mu = _probability("p_plus", p_plus) + _probability("p_minus", p_minus)
    if bool((mu <= 1).any()):
        raise ValueError(f"p_plus + p_minus: expected > 1 (the bound holds only then), got min {float(mu.min())}")
    return 1.0 - torch.exp(-m * (mu - 1.0) ** 2 / 4.0)


def _outcome_and_vote(outcome: Tensor, mean_vote: Tensor) -> tuple[Tensor, Tensor]:
    o = torch.as_tensor(outcome, dtype=torch.float64)
    s = torch.as_tensor(mean_vote, dtype=torch.float64)
    if bool((o.abs() != 1).any()):
        raise ValueError("outcome: expected values in {-1, +1}")
    if not bool(torch.isfinite(s).all()) or bool((s.abs() > 1).any()):
        raise ValueError("mean_vote: expected values in [-1, 1]")
    o, s = torch.broadcast_tensors(o, s)
    return o, s


def consistency_reward(outcome: Tensor, mean_vote: Tensor, vote: Tensor, *, lam: float = 1.0) -> Tensor:
    """General-``lam`` consistency reward ``(O + lam * s_bar) * S`` (arXiv 2602.02488), float64.

    Args:
        outcome: outcomes in ``{-1, +1}``.
        mean_vote: mean votes ``s_bar`` in ``[-1, 1]``.
        vote: the judged vote ``S`` (broadcasts).
        lam: ``lambda`` of the integrated reward.
    """
    o, s = _outcome_and_vote(outcome, mean_vote)
    return (o + lam * s) * torch.as_tensor(vote, dtype=torch.float64)


def importance_weights(outcome: Tensor, mean_vote: Tensor, *, lam: float = 1.0) -> tuple[Tensor, Tensor]:
    """Theorem 2's weights ``f+ = 1{O=1}(1 + lam s)/2`` and ``f- = 1{O=-1}(1 - lam s)/2`` (float64).

    Both lie in ``[0, 1]`` when ``lam = 1``; for ``lam > 1`` they can be negative (e.g. ``O = 1, s = -1``).

    Args:
        outcome: outcomes in ``{-1, +1}``.
        mean_vote: mean votes in ``[-1, 1]``.
        lam: ``lambda``.

    Returns:
        ``(f_plus, f_minus)``, broadcast shape.
    """
    o, s = _outcome_and_vote(outcome, mean_vote)
    zero = torch.zeros((), dtype=torch.float64)
    f_plus = torch.where(o == 1, (1 + lam * s) / 2, zero)
    f_minus = torch.where(o == -1, (1 - lam * s) / 2, zero)
    return f_plus, f_minus


@dataclass(frozen=True)
class Theorem2Sides:
    """Both sides of Theorem 2's identity on a finite sample (float64 scalars).

    Attributes:
        lhs: ``mean[(O + lam s)(2p - 1)]``, the expected consistency reward (``p = P(vote = +1)``).
        rhs: ``4 * (inner_plus + inner_minus) + constant``.
        inner_plus: ``<p+, f+> = mean(p+ f+)`` with ``p+ = p`` (``f+`` is 0 on failures).
        inner_minus: ``<p-, f-> = mean(p- f-)`` with ``p- = 1 - p``.
        constant: ``C = -mean(O (O + lam s))``, independent of the judge's ``p``.
    """

    lhs: Tensor
    rhs: Tensor
    inner_plus: Tensor
    inner_minus: Tensor
    constant: Tensor


def theorem2_sides(outcome: Tensor, mean_vote: Tensor, p: Tensor, *, lam: float = 1.0) -> Theorem2Sides:
    """Evaluate both sides of Theorem 2's identity (arXiv 2602.02488; holds for every ``lam``).

    The step reward ``R = O + lam s`` is treated as fixed with respect to the judged vote (stop-gradient), so a vote
    drawn with ``P(+1) = p`` has expected consistency reward ``R (2p - 1)``.

    Args:
        outcome: ``(n,)`` outcomes in ``{-1, +1}``.
        mean_vote: ``(n,)`` mean votes in ``[-1, 1]``.
        p: ``(n,)`` probabilities that the judge votes +1 on that step.
        lam: ``lambda``.
    """
    o, s = _outcome_and_vote(outcome, mean_vote)
    prob = _probability("p", p)
    o, s, prob = torch.broadcast_tensors(o, s, prob)
    reward = o + lam * s
    lhs = (reward * (2 * prob - 1)).mean()
    f_plus, f_minus = importance_weights(o, s, lam=lam)
    inner_plus = (prob * f_plus).mean()
    inner_minus = ((1 - prob) * f_minus).mean()
    constant = (-o * reward).mean()
    return Theorem2Sides(lhs, 4 * (inner_plus + inner_minus) + constant, inner_plus, inner_minus, constant)


def weight_norm_ratio(f_plus: Tensor, f_minus: Tensor) -> float:
    """``||f+|| / ||f-||`` (empirical L2 norms): ``inf`` when ``f-`` is 0 and ``f+`` is not, ``nan`` when both are."""
    num = float(torch.linalg.vector_norm(f_plus.to(torch.float64)))
    den = float(torch.linalg.vector_norm(f_minus.to(torch.float64)))
    if den == 0.0:
        return math.inf if num > 0 else math.nan
    return num / den
