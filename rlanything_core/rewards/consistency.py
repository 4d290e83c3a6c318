"""Consistency feedback for the reward model (judge) as pure tensor functions (arXiv 2602.02488).

Each judge vote ``S_{tau_i,j}`` gets the raw reward ``R_{tau_i} * S_{tau_i,j}`` (rewarded when it agrees in sign with
the integrated feedback, which mixes the outcome and the other votes); an unparseable vote gets ``FORMAT_PENALTY``
(-2, at or below every parseable reward when ``|R| <= 2``). The ``m`` raw rewards of one step are then z-scored among
themselves.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_finite_where,
    check_floating,
    check_index,
    check_shape,
    check_tensor,
)
from rlanything_core.advantages._checks import (
    check_finite_scalar,
    check_nonnegative_scalar,
    check_vote_grid,
    finite_where,
    inverse_std,
    sum_last,
    zero_outside,
)
from rlanything_core.constants import EPS, FORMAT_PENALTY

__all__ = ["balanced_step_weights", "consistency_targets", "standardize_votes", "vote_agreement"]


def consistency_targets(
    step_reward: Tensor,
    votes: Tensor,
    vote_mask: Tensor,
    vote_valid: Tensor,
    *,
    format_penalty: float = FORMAT_PENALTY,
) -> Tensor:
    """Raw consistency reward of every judge vote: ``R_{tau_i} * S_{tau_i,j}`` (arXiv 2602.02488).

    Args:
        step_reward: ``(B, S)`` floating integrated step reward ``R`` (finite wherever a vote was requested).
        votes: ``(B, S, M)`` floating judge scores.
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; implies ``vote_mask``.
        format_penalty: raw reward of an unparseable vote (``vote_mask & ~vote_valid``), finite.

    Returns:
        ``(B, S, M)`` in the promoted dtype: ``R * vote`` for valid votes, ``format_penalty`` for unparseable ones,
        0 where no vote was requested.

    Examples:
        >>> import torch
        >>> reward = torch.tensor([[1.5, float("nan")]])
        >>> votes = torch.tensor([[[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]]])
        >>> mask = torch.tensor([[[True, True, True], [False, False, False]]])
        >>> valid = torch.tensor([[[True, True, False], [False, False, False]]])
        >>> consistency_targets(reward, votes, mask, valid)
        tensor([[[ 1.5000, -1.5000, -2.0000],
                 [ 0.0000,  0.0000,  0.0000]]])
    """
    reward = check_tensor("step_reward", step_reward)
    check_floating("step_reward", reward)
    check_shape("step_reward", reward, (None, None))
    votes, vote_mask, vote_valid, clean = check_vote_grid(votes, vote_mask, vote_valid, tuple(reward.shape))
    penalty = check_finite_scalar("format_penalty", format_penalty)
    has_votes = vote_mask.any(dim=-1)
    cleaned = finite_where("step_reward", reward, has_votes)
    dtype = torch.promote_types(reward.dtype, votes.dtype)
    # R * vote where valid (both factors cleaned: 0 off their masks), plus the penalty where a vote failed.
    raw = cleaned.to(dtype).mul_(has_votes).unsqueeze(-1) * clean.to(dtype)
    failed = (vote_mask > vote_valid).to(dtype)
    return torch.add(raw, failed, alpha=penalty).add_(0.0)  # + 0.0: no -0 in the output


def standardize_votes(targets: Tensor, vote_mask: Tensor, *, eps: float = EPS) -> Tensor:
    """Z-score the requested votes of each step among themselves: ``(x - mean) / std`` over the last axis.

    Population std over the ``m`` requested votes of a step; a step whose std is ``<= eps`` (all equal, or a single
    vote) gets all 0 (the authors skip those groups); so does a std within float rounding of the mean (equal float32
    values, see ``inverse_std`` in ``advantages._checks``).

    Args:
        targets: ``(B, S, M)`` floating raw rewards, finite where ``vote_mask``.
        vote_mask: ``(B, S, M)`` bool.
        eps: degenerate-std threshold, ``>= 0``.

    Returns:
        ``(B, S, M)`` in ``targets.dtype``; 0 where no vote was requested.

    Examples:
        >>> import torch
        >>> targets = torch.tensor([[[1.5, -1.5, -2.0], [1.0, 1.0, float("nan")]]])
        >>> mask = torch.tensor([[[True, True, True], [True, True, False]]])
        >>> standardize_votes(targets, mask)
        tensor([[[ 1.4018, -0.5392, -0.8627],
                 [ 0.0000,  0.0000,  0.0000]]])
    """
    x = check_tensor("targets", targets)
    check_floating("targets", x)
    check_shape("targets", x, (None, None, None))
    mask = check_tensor("vote_mask", vote_mask)
    check_bool("vote_mask", mask)
    check_shape("vote_mask", mask, tuple(x.shape))
    eps = check_nonnegative_scalar("eps", eps)
    weight = mask.to(x.dtype)
    count = sum_last(weight).clamp(min=1)
    clean = finite_where("targets", x, mask).mul_(weight)  # NaN-safe select (see advantages._checks.zero_outside)
    mean = sum_last(clean) / count
    dev = (clean - mean.unsqueeze(-1)).mul_(weight)
    std = (sum_last(dev * dev) / count).sqrt()
    return dev.mul_(inverse_std(std, mean, eps).unsqueeze(-1)).add_(0.0)  # + 0.0: no -0 in the output


def vote_agreement(votes: Tensor, vote_valid: Tensor, outcome: Tensor) -> Tensor:
    """Fraction of valid votes whose sign equals the sign of their rollout's outcome (a judge accuracy metric).

    Args:
        votes: ``(B, S, M)`` floating judge scores.
        vote_valid: ``(B, S, M)`` bool, ``True`` where the vote parsed.
        outcome: ``(B,)`` floating, finite.

    Returns:
        Scalar in ``votes.dtype``; 0 when there is no valid vote (never NaN).

    Examples:
        >>> import torch
        >>> votes = torch.tensor([[[1.0, -1.0]], [[-1.0, float("nan")]]])
        >>> valid = torch.tensor([[[True, True]], [[True, False]]])
        >>> vote_agreement(votes, valid, torch.tensor([1.0, -1.0]))
        tensor(0.6667)
    """
    v = check_tensor("votes", votes)
    check_floating("votes", v)
    check_shape("votes", v, (None, None, None))
    vv = check_tensor("vote_valid", vote_valid)
    check_bool("vote_valid", vv)
    check_shape("vote_valid", vv, tuple(v.shape))
    check_finite_where("votes", v, vv)
    out = check_tensor("outcome", outcome)
    check_floating("outcome", out)
    check_shape("outcome", out, (v.shape[0],))
    check_finite_where("outcome", out, torch.ones_like(out, dtype=torch.bool))
    agree = vv & (torch.sign(zero_outside(v, vv)) == torch.sign(out).view(-1, 1, 1))
    total = vv.sum()
    rate = agree.sum().to(torch.float64) / total.clamp(min=1).to(torch.float64)
    return rate.to(v.dtype)


def balanced_step_weights(outcome: Tensor, step_mask: Tensor, group_index: Tensor) -> Tensor:
    """Per-step weights that give a task group's won and failed episodes' steps equal total weight.

    Why: with ``lam <= 1`` the sign of the integrated reward is the outcome's, so the consistency targets push a
    vote toward ``+1`` on every step of a won episode and toward ``-1`` on every step of a failed one. Failed episodes
    run to the step limit and hold most steps, so unweighted targets teach the judge the class balance (an all ``-1``
    judge), not which steps progress. Within a group with ``n`` steps, ``n_won`` of them in won episodes
    (outcome ``> 0``) and ``n_failed`` in the others, a won step weighs ``n / (2 n_won)`` and a failed one
    ``n / (2 n_failed)``: each class totals ``n / 2`` whatever the episodes' lengths, and the group's total stays
    ``n`` (the loss's scale is unchanged). A group whose episodes all won or all failed has nothing to balance:
    weight 1.

    The weights multiply the *standardized* targets (``ConsistencyTargets(balance_outcomes=True)``): the per-step
    z-score over the ``m`` votes is invariant to a positive factor shared by the step's votes, so a weight applied
    before it would cancel.

    Args:
        outcome: ``(B,)`` floating, finite; ``> 0`` is a won episode.
        step_mask: ``(B, S)`` bool, the steps each episode took.
        group_index: ``(B,)`` int64 task group of each episode.

    Returns:
        ``(B, S)`` float32 weights, ``> 0`` on ``step_mask`` and 0 elsewhere.

    Examples:
        >>> import torch
        >>> outcome = torch.tensor([1.0, -1.0])
        >>> steps = torch.tensor([[True, False, False], [True, True, True]])
        >>> balanced_step_weights(outcome, steps, torch.tensor([0, 0]))
        tensor([[2.0000, 0.0000, 0.0000],
                [0.6667, 0.6667, 0.6667]])
    """
    out = check_tensor("outcome", outcome)
    check_floating("outcome", out)
    check_shape("outcome", out, (None,))
    check_finite_where("outcome", out, torch.ones_like(out, dtype=torch.bool))
    mask = check_tensor("step_mask", step_mask)
    check_bool("step_mask", mask)
    check_shape("step_mask", mask, (out.shape[0], None))
    groups = check_tensor("group_index", group_index)
    check_index("group_index", groups)
    check_shape("group_index", groups, (out.shape[0],))
    won = out > 0
    steps = mask.sum(dim=1).to(torch.float64)  # (B,) steps per episode
    size = int(groups.max()) + 1 if groups.numel() else 0
    won_steps = torch.zeros(size, dtype=torch.float64).index_add_(0, groups, steps * won)
    failed_steps = torch.zeros(size, dtype=torch.float64).index_add_(0, groups, steps * ~won)
    total = won_steps + failed_steps
    mixed = (won_steps > 0) & (failed_steps > 0)
    mine = torch.where(won, won_steps[groups], failed_steps[groups])  # steps of this episode's class in its group
    weight = torch.where(mixed[groups], total[groups] / (2 * mine.clamp(min=1)), torch.ones_like(mine))
    return (weight.unsqueeze(1) * mask).to(torch.float32)
