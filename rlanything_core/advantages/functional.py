"""Integrated feedback for the policy as pure tensor functions (arXiv 2602.02488).

Step reward ``R_{tau_i} = O_tau + (lam / m) * sum_j S_{tau_i,j}`` on a right-padded ``(B, S)`` step grid, then the
advantage ``A_{tau_i} = (R_{tau_i} - mean) / std`` over the rollouts of the same task that reach step index ``i``
(population std). Padding may hold NaN/inf/garbage and never changes an output: masks select (non-finite entries
are zeroed first, then a 0/1 product, which is exact; see ``advantages._checks``), they never scale a value.
"""

from __future__ import annotations

import enum

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_finite_where,
    check_floating,
    check_index,
    check_shape,
    check_tensor,
)
from rlanything_core.advantages._checks import (
    check_nonnegative_scalar,
    check_step_grid,
    check_vote_grid,
    finite_where,
    inverse_std,
    sum_last,
)
from rlanything_core.constants import EPS
from rlanything_core.masking import compact_index

__all__ = [
    "SingletonRule",
    "group_success_rate",
    "integrated_step_reward",
    "mean_votes",
    "outcome_step_reward",
    "standardize_per_step",
    "step_only_reward",
]


class SingletonRule(enum.Enum):
    """What a (task group, step index) cell reached by only ONE rollout of its group gets.

    ``ZERO`` (default): a single sample has no baseline to compare with, so its advantage is 0 -- exactly what a
    group of identical rewards gets, and it keeps every advantage on the z-score scale. ``RAW``: the authors' code
    keeps the raw reward (in ``[-2, 2]``) next to z-scores (a bug of the authors' code, Open-AgentRL
    ``reward/alfworld_rl_reward.py``: the tail steps of the longest rollout get un-normalised, outcome-signed
    advantages); kept only to reproduce their numbers.
    """

    ZERO = "zero"
    RAW = "raw"


def _check_outcome(outcome: object) -> Tensor:
    out = check_tensor("outcome", outcome)
    check_floating("outcome", out)
    check_shape("outcome", out, (None,))
    check_finite_where("outcome", out, torch.ones_like(out, dtype=torch.bool))
    return out


def _check_votes_inside_steps(step_mask: Tensor, requested: Tensor) -> None:
    if bool(((requested > 0) > step_mask).any()):
        raise ValueError("vote_mask: a vote is marked at a padded step (vote_mask must lie inside step_mask)")


def _requested(vote_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """``(B, S)`` number of requested votes per step, in ``dtype``."""
    return sum_last(vote_mask.to(dtype))


def _mean_votes(clean_votes: Tensor, requested: Tensor) -> Tensor:
    """Sum of the valid votes (``clean_votes``: 0 elsewhere) / number requested (0 where none)."""
    return (sum_last(clean_votes) / requested.clamp(min=1)).add_(0.0)  # + 0.0: no -0


def mean_votes(votes: Tensor, vote_mask: Tensor, vote_valid: Tensor) -> Tensor:
    """Mean judge score of each step, ``s_bar = (1/m) * sum_j S_j`` over the ``m`` requested votes.

    An unparseable vote (``vote_mask & ~vote_valid``) counts as 0 in that mean, as in the paper's
    ``(lam/m) * sum_j S`` with the authors' ``S = 0`` for failures: a judge that fails to answer pulls the step
    towards "no information", it is not dropped from the denominator. A step with no requested vote gets 0.

    Args:
        votes: ``(B, S, M)`` floating; meaningful where ``vote_valid`` (values in ``[-1, 1]``).
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; must imply ``vote_mask``.

    Returns:
        ``(B, S)`` in ``votes.dtype``.

    Examples:
        >>> import torch
        >>> votes = torch.tensor([[[1.0, -1.0, float("nan")], [1.0, 1.0, 1.0]]])
        >>> mask = torch.tensor([[[True, True, True], [False, False, False]]])
        >>> mean_votes(votes, mask, mask & ~votes.isnan())  # the NaN vote is a format failure: counts as 0
        tensor([[0., 0.]])
    """
    votes, vote_mask, _, clean = check_vote_grid(votes, vote_mask, vote_valid)
    return _mean_votes(clean, _requested(vote_mask, votes.dtype))


def integrated_step_reward(
    outcome: Tensor,
    step_mask: Tensor,
    votes: Tensor,
    vote_mask: Tensor,
    vote_valid: Tensor,
    *,
    lam: float = 1.0,
) -> Tensor:
    r"""Integrated feedback ``R_{tau_i} = O_tau + lam * s_bar_{tau_i}`` (arXiv 2602.02488).

    $$
    R_{\tau_i} = O_\tau + \frac{\lambda}{m} \sum_{j=1}^{m} S_{\tau_i,j}
    $$

    over the step's ``m`` requested votes, an unparseable vote counting as 0 (see ``mean_votes``).

    Args:
        outcome: ``(B,)`` floating, finite outcome ``O`` of each rollout (``+1``/``-1`` in the paper).
        step_mask: ``(B, S)`` bool, ``True`` at real steps.
        votes: ``(B, S, M)`` floating judge scores.
        vote_mask: ``(B, S, M)`` bool, inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool, inside ``vote_mask``.
        lam: weight ``lam >= 0`` of the step-wise signal (paper default 1).

    Returns:
        ``(B, S)`` step rewards in the promoted dtype of ``outcome`` and ``votes``; 0 at padding.

    Examples:
        >>> import torch
        >>> outcome = torch.tensor([1.0, -1.0])
        >>> step_mask = torch.tensor([[True, True], [True, False]])
        >>> votes = torch.tensor([[[1.0, -1.0], [1.0, 1.0]], [[-1.0, -1.0], [0.0, 0.0]]])
        >>> vote_mask = step_mask.unsqueeze(-1).expand(2, 2, 2)
        >>> integrated_step_reward(outcome, step_mask, votes, vote_mask, vote_mask)
        tensor([[ 1.,  2.],
                [-2.,  0.]])
    """
    outcome = _check_outcome(outcome)
    step_mask = check_step_grid(step_mask, outcome.shape[0])
    votes, vote_mask, _, clean = check_vote_grid(votes, vote_mask, vote_valid, tuple(step_mask.shape))
    lam = check_nonnegative_scalar("lam", lam)
    dtype = torch.promote_types(outcome.dtype, votes.dtype)
    requested = _requested(vote_mask, dtype)
    _check_votes_inside_steps(step_mask, requested)
    reward = outcome.to(dtype).unsqueeze(1) + lam * _mean_votes(clean.to(dtype), requested)
    return (reward * step_mask).add_(0.0)  # finite everywhere: the product selects exactly; + 0.0 turns -0 into 0


def outcome_step_reward(outcome: Tensor, step_mask: Tensor) -> Tensor:
    """Outcome-only step reward ``R_{tau_i} = O_tau`` (GRPO; the integrated reward with ``lam = 0``).

    Args:
        outcome: ``(B,)`` floating, finite.
        step_mask: ``(B, S)`` bool.

    Returns:
        ``(B, S)``: ``O`` broadcast to the real steps, 0 at padding.

    Examples:
        >>> import torch
        >>> outcome_step_reward(torch.tensor([1.0, -1.0]), torch.tensor([[True, True], [True, False]]))
        tensor([[ 1.,  1.],
                [-1.,  0.]])
    """
    outcome = _check_outcome(outcome)
    step_mask = check_step_grid(step_mask, outcome.shape[0])
    return (outcome.unsqueeze(1) * step_mask).add_(0.0)  # finite: the product selects exactly; no -0


def step_only_reward(step_mask: Tensor, votes: Tensor, vote_mask: Tensor, vote_valid: Tensor) -> Tensor:
    """Step-only reward ``R_{tau_i} = s_bar_{tau_i}``: an optimized judge's votes replace the outcome.

    arXiv 2602.02488 (step-wise signals from the optimized reward model vs outcome signals).

    Args:
        step_mask: ``(B, S)`` bool.
        votes: ``(B, S, M)`` floating judge scores.
        vote_mask: ``(B, S, M)`` bool, inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool, inside ``vote_mask``.

    Returns:
        ``(B, S)`` mean votes (unparseable votes count 0), 0 at padding.

    Examples:
        >>> import torch
        >>> votes = torch.tensor([[[1.0, 1.0], [-1.0, 1.0]]])
        >>> mask = torch.ones(1, 2, 2, dtype=torch.bool)
        >>> step_only_reward(torch.tensor([[True, True]]), votes, mask, mask)
        tensor([[1., 0.]])
    """
    step_mask = check_step_grid(step_mask)
    votes, vote_mask, _, clean = check_vote_grid(votes, vote_mask, vote_valid, tuple(step_mask.shape))
    requested = _requested(vote_mask, votes.dtype)
    _check_votes_inside_steps(step_mask, requested)
    return _mean_votes(clean, requested)  # 0 at padding: no vote is requested there


def standardize_per_step(
    step_reward: Tensor,
    step_mask: Tensor,
    group_index: Tensor,
    *,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
) -> Tensor:
    """Advantage ``A_{tau_i} = (R_{tau_i} - mean) / std`` per (task group, step index) (arXiv 2602.02488).

    The statistics run over the rollouts of the same task that reach step ``i`` (ragged lengths), with the
    population std. A cell whose std is ``<= eps`` gets 0, and so does one whose std is within float rounding of
    its mean (in float32 the mean of 7+ equal rewards such as ``4/3`` is an ulp off, which an absolute ``eps = 1e-8``
    would read as a spread and turn into advantages of +-1). A cell reached by one rollout follows ``singleton``.

    Args:
        step_reward: ``(B, S)`` floating, finite at real steps (padding may hold anything).
        step_mask: ``(B, S)`` bool.
        group_index: ``(B,)`` int64 task group of each rollout (groups of any size, any order).
        eps: degenerate-std threshold, ``>= 0``.
        singleton: rule for a step index reached by a single rollout of its group.

    Returns:
        ``(B, S)`` advantages in ``step_reward.dtype``; 0 at padding, never NaN.

    Examples:
        >>> import torch
        >>> reward = torch.tensor([[2.0, 1.0, 0.5], [0.0, -1.0, float("nan")], [-2.0, 1.0, float("nan")]])
        >>> mask = torch.tensor([[True, True, True], [True, True, False], [True, False, False]])
        >>> standardize_per_step(reward, mask, torch.tensor([0, 0, 0]))
        tensor([[ 1.2247,  1.0000,  0.0000],
                [ 0.0000, -1.0000,  0.0000],
                [-1.2247,  0.0000,  0.0000]])
        >>> standardize_per_step(reward, mask, torch.tensor([0, 0, 0]), singleton=SingletonRule.RAW)[0, 2]
        tensor(0.5000)
    """
    # Stays one function: one vectorised formula (two passes over segment sums); the length is its doctested docstring.
    reward = check_tensor("step_reward", step_reward)
    check_floating("step_reward", reward)
    check_shape("step_reward", reward, (None, None))
    step_mask = check_step_grid(step_mask, reward.shape[0])
    check_shape("step_mask", step_mask, tuple(reward.shape))
    group_index = check_tensor("group_index", group_index)
    check_index("group_index", group_index)
    check_shape("group_index", group_index, (reward.shape[0],))
    cleaned = finite_where("step_reward", reward, step_mask)
    eps = check_nonnegative_scalar("eps", eps)
    if not isinstance(singleton, SingletonRule):
        raise ValueError(f"singleton: expected a SingletonRule, got {singleton!r}")
    # Row-wise segment sums: one (K, S) table per statistic, rollouts added to their group's row (index_add over
    # dim 0), read back with a row gather.
    # Two passes (mean, then squared deviations): E[x^2] - E[x]^2 cancels catastrophically.
    groups, num_groups = compact_index(group_index.to(torch.int64))
    dtype = torch.promote_types(reward.dtype, torch.float32)
    mask = step_mask.to(dtype)
    work = cleaned.to(dtype).mul_(mask)  # NaN-safe select: non-finite padding was zeroed by finite_where
    table = torch.zeros(num_groups, reward.shape[1], dtype=dtype, device=reward.device)
    count = table.index_add(0, groups, mask)
    denom = count.clamp(min=1)
    mean = table.index_add(0, groups, work) / denom
    dev = (work - mean[groups]).mul_(mask)
    std = (table.index_add(0, groups, dev * dev) / denom).sqrt()
    inv_std = torch.where(count >= 2, inverse_std(std, mean, eps), 0.0)
    z = dev.mul_(inv_std[groups])
    if singleton is SingletonRule.RAW:  # a singleton cell has dev == 0 exactly: add its raw reward
        z = z + work * (count[groups] == 1)
    return z.add_(0.0).to(reward.dtype)  # + 0.0: no -0 in the output


def group_success_rate(outcome: Tensor, group_index: Tensor, *, dtype: torch.dtype | None = None) -> Tensor:
    """Success rate (fraction of rollouts with ``outcome > 0``) of each rollout's task group.

    Args:
        outcome: ``(B,)`` floating, finite.
        group_index: ``(B,)`` int64 task group of each rollout.
        dtype: dtype of the result (default ``outcome.dtype``). Pass ``torch.float64`` for a rate that meets a
            band: ``k/n`` is computed from counts in float64, where it compares equal to the band's Python float
            (``4/5 == 0.8``); rounded to float32 it becomes ``0.80000001`` and leaves a ``[0.2, 0.8]`` band.

    Returns:
        ``(B,)`` in ``dtype``: ``k/n`` of the rollout's group.

    Examples:
        >>> import torch
        >>> group_success_rate(torch.tensor([1.0, -1.0, -1.0, 1.0]), torch.tensor([3, 3, 7, 3]))
        tensor([0.6667, 0.6667, 0.0000, 0.6667])
    """
    outcome = _check_outcome(outcome)
    group_index = check_tensor("group_index", group_index)
    check_index("group_index", group_index)
    check_shape("group_index", group_index, (outcome.shape[0],))
    groups, num_groups = compact_index(group_index.to(torch.int64))
    size = torch.bincount(groups, minlength=num_groups)
    wins = torch.bincount(groups[outcome > 0], minlength=num_groups)
    rate = wins.to(torch.float64) / size.clamp(min=1).to(torch.float64)
    return rate[groups].to(outcome.dtype if dtype is None else dtype)
