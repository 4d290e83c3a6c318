"""One validated pass for the whole feedback step: the policy's advantages and the judge's consistency targets.

:func:`integrated_advantages_and_consistency` returns what the composition of the public functions returns::

    reward = integrated_step_reward(outcome, step_mask, votes, vote_mask, vote_valid, lam=lam)
    advantages = standardize_per_step(reward, step_mask, group_index, eps=eps, singleton=singleton)
    targets = standardize_votes(consistency_targets(reward, votes, vote_mask, vote_valid, ...), vote_mask, eps=eps)

(PAPER.md §2.1-2.3), equal within float rounding (the tests check 1e-5 against both the composition and the
plain-Python reference), but it validates its inputs once and makes about a third of the passes over the grid.

How (measured on CPU, where this runs in the training loop between generation calls): torch's kernels are fast on
contiguous same-shape operands and several times slower on strided ones, on broadcasts along a small trailing axis,
on reductions over it, on ``torch.where`` and on float comparisons. So the ``(B, S, M)`` vote grid is turned ONCE
into ``M`` contiguous ``(B, S)`` planes (the two masks first folded into one ``uint8`` code, then one strided copy each
for the code and the votes), every sum over the votes is then an add of planes and every per-step broadcast a
leading-axis broadcast, and the z-scored targets are written back to the ``(B, S, M)`` layout by the last multiply.
Selections are exact arithmetic (``nan_to_num`` then a 0/1 product, ``sign(x - tol).clamp(0)`` instead of
``where(x > tol, ...)``), which gives the same results as ``torch.where`` for the finite values involved.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_floating,
    check_index,
    check_shape,
    check_tensor,
)
from rlanything_core.advantages._checks import (
    check_finite_scalar,
    check_nonnegative_scalar,
    check_vote_grid,
)
from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.types import StepBatch

__all__ = ["FeedbackTargets", "batch_advantages_and_consistency", "integrated_advantages_and_consistency"]

_DENSE_IDS = 8  # compact group ids with a bincount when max id < _DENSE_IDS * B + 1024, else with torch.unique


class FeedbackTargets(NamedTuple):
    """The two training signals of one iteration (a named tuple: ``advantages, targets = ...`` works).

    Attributes:
        advantages: ``(B, S)`` policy advantages, 0 at padding.
        targets: ``(B, S, M)`` z-scored consistency rewards of the judge votes, 0 where no vote was requested.
    """

    advantages: Tensor
    targets: Tensor


def _check_tensors(
    outcome: object, step_mask: object, group_index: object, votes: object, vote_mask: object, vote_valid: object
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Types, dtypes and shapes (no pass over the data except the small ``(B,)`` ones)."""
    out = check_tensor("outcome", outcome)
    check_floating("outcome", out)
    check_shape("outcome", out, (None,))
    if out.numel() and not bool(torch.isfinite(out).all()):
        bad = int((~torch.isfinite(out)).nonzero()[0, 0])
        raise ValueError(f"outcome: non-finite value at unmasked position ({bad},); only padding may hold NaN/inf")
    (b,) = out.shape
    mask = check_tensor("step_mask", step_mask)
    check_bool("step_mask", mask)
    check_shape("step_mask", mask, (b, None))
    groups = check_tensor("group_index", group_index)
    check_index("group_index", groups)
    check_shape("group_index", groups, (b,))
    v = check_tensor("votes", votes)
    vm = check_tensor("vote_mask", vote_mask)
    vv = check_tensor("vote_valid", vote_valid)
    check_floating("votes", v)
    check_shape("votes", v, (b, mask.shape[1], None))
    check_bool("vote_mask", vm)
    check_shape("vote_mask", vm, tuple(v.shape))
    check_bool("vote_valid", vv)
    check_shape("vote_valid", vv, tuple(v.shape))
    return out, mask, groups, v, vm, vv


def _compact_groups(group_index: Tensor) -> tuple[Tensor, int]:
    """Map group ids to ``0..K-1`` (same grouping as ``masking.compact_index``; a bincount when the ids are dense)."""
    if group_index.numel() == 0:
        return group_index.to(torch.int64), 0
    ids = group_index.to(torch.int64)
    if int(ids.max()) < _DENSE_IDS * ids.numel() + 1024:
        present = torch.bincount(ids) > 0
        remap = torch.cumsum(present, 0) - 1
        return remap[ids], int(remap[-1]) + 1
    unique, inverse = torch.unique(ids, return_inverse=True)
    return inverse, int(unique.numel())


def _fast_inverse_std(std: Tensor, mean: Tensor, eps: float) -> Tensor:
    """:func:`~rlanything_core.advantages._checks.inverse_std` in arithmetic: identical for finite ``std >= 0``.

    ``sign(std - tol).clamp(min=0)`` is 1 exactly where ``std > tol`` (subtraction of distinct finite floats is never
    0) and 0 elsewhere; ``1 / std.clamp(min=tiny)`` is finite, so the product selects exactly.
    """
    tiny = torch.finfo(std.dtype).tiny
    tol = mean.abs().mul_(8 * torch.finfo(std.dtype).eps).clamp_(min=eps)
    return torch.sign(std - tol).clamp_(min=0.0).mul_(std.clamp(min=tiny).reciprocal_())


def integrated_advantages_and_consistency(
    outcome: Tensor,
    step_mask: Tensor,
    group_index: Tensor,
    votes: Tensor,
    vote_mask: Tensor,
    vote_valid: Tensor,
    *,
    lam: float = 1.0,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
    format_penalty: float = FORMAT_PENALTY,
) -> FeedbackTargets:
    """Advantages ``(R - mean) / std`` per (group, step) and z-scored consistency targets of ``R * vote``, fused.

    ``R = O + lam * mean_j S_j`` (unparseable votes count 0 in the mean over the requested ones); the advantages
    standardize ``R`` over the rollouts of a task group that reach the step (PAPER.md §2.2; ``singleton`` for a step
    reached by one rollout); the consistency reward of a vote is ``R * S`` (``format_penalty`` if it did not parse),
    z-scored over the requested votes of its step (§2.3). Degenerate spreads (``std <= eps`` or within float
    rounding of the mean) give 0. Same values as the composition in the module docstring, same ``ValueError`` s.

    Args:
        outcome: ``(B,)`` floating, finite.
        step_mask: ``(B, S)`` bool, ``True`` at real steps.
        group_index: ``(B,)`` int64 (or int32) non-negative task group of each rollout.
        votes: ``(B, S, M)`` floating; finite and in ``[-1, 1]`` where ``vote_valid`` (padding may hold anything).
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested; inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; inside ``vote_mask``.
        lam: weight of the judge's mean vote, finite and ``>= 0``.
        eps: degenerate-std threshold, ``>= 0``.
        singleton: rule for a (group, step) cell reached by one rollout.
        format_penalty: raw consistency reward of an unparseable vote, finite.

    Returns:
        :class:`FeedbackTargets`: ``advantages`` ``(B, S)`` and ``targets`` ``(B, S, M)``, contiguous, in the promoted
        dtype of ``outcome`` and ``votes``; 0 at padding, never NaN.

    Examples:
        >>> import torch
        >>> step_mask = torch.tensor([[True, True], [True, False]])
        >>> votes = torch.tensor([[[1.0, 1.0], [1.0, -1.0]], [[-1.0, float("nan")], [0.0, 0.0]]])
        >>> vote_mask = step_mask.unsqueeze(-1).expand(2, 2, 2)
        >>> vote_valid = vote_mask & ~votes.isnan()
        >>> out = integrated_advantages_and_consistency(
        ...     torch.tensor([1.0, -1.0]), step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_valid
        ... )
        >>> out.advantages
        tensor([[1., 0.],
                [-1., 0.]])
        >>> out.targets
        tensor([[[ 0.,  0.],
                 [ 1., -1.]],
        <BLANKLINE>
                [[ 1., -1.],
                 [ 0.,  0.]]])
    """
    out, mask, groups_in, v, vm, vv = _check_tensors(outcome, step_mask, group_index, votes, vote_mask, vote_valid)
    lam = check_nonnegative_scalar("lam", lam)
    eps = check_nonnegative_scalar("eps", eps)
    penalty = check_finite_scalar("format_penalty", format_penalty)
    if not isinstance(singleton, SingletonRule):
        raise ValueError(f"singleton: expected a SingletonRule, got {singleton!r}")
    b, s, m = v.shape
    dtype = torch.promote_types(out.dtype, v.dtype)
    wd = torch.promote_types(dtype, torch.float32)  # work dtype (half inputs are computed in float32)
    device = v.device

    # --- votes: one uint8 code per slot (0 none, 1 valid, 2 unparseable, 255 valid-but-not-requested), as planes
    vm8, vv8 = vm.view(torch.uint8), vv.view(torch.uint8)
    code = torch.add(vm8, vm8).sub_(vv8)
    if code.numel() and int(code.max()) > 2:
        raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must imply vote_mask)")
    planes = torch.empty((m, b, s), dtype=wd, device=device).copy_(code.permute(2, 0, 1))  # code 0/1/2 as floats
    asked = planes.clamp(max=1.0)  # 1 where requested
    failed = planes.sub_(asked)  # 1 where unparseable (code 2), 0 elsewhere
    clean = torch.empty((m, b, s), dtype=wd, device=device).copy_(v.permute(2, 0, 1))
    clean.nan_to_num_(nan=2.0, posinf=2.0, neginf=-2.0).mul_(asked - failed)  # valid votes, 0 elsewhere
    if clean.numel():
        low, high = torch.aminmax(clean)  # a non-finite valid vote became +-2: one range check finds both
        if float(low) < -1.0 or float(high) > 1.0:
            check_vote_grid(v, vm, vv)  # raises the precise error (non-finite, or outside [-1, 1])
            raise ValueError("votes: expected finite values in [-1, 1] where vote_valid")
    num_asked = asked.sum(0)
    step_w = mask.view(torch.uint8).to(wd)
    if num_asked.numel() and float(num_asked.mul(1.0 - step_w).max()) > 0:
        raise ValueError("vote_mask: a vote is marked at a padded step (vote_mask must lie inside step_mask)")
    denom = num_asked.clamp_(min=1.0)

    # --- integrated step reward R = O + lam * mean vote (0 at padding)
    reward = torch.add(out.to(wd).unsqueeze(1), clean.sum(0).div_(denom), alpha=lam).mul_(step_w)

    # --- advantages: z-score of R per (task group, step index), row-wise segment sums over the (K, S) table
    groups, num_groups = _compact_groups(groups_in.to(device))
    table = torch.zeros(num_groups, s, dtype=wd, device=device)
    count = table.index_add(0, groups, step_w)
    count_d = count.clamp(min=1.0)
    mean = table.index_add(0, groups, reward).div_(count_d)
    dev = (reward - mean.index_select(0, groups)).mul_(step_w)
    std = table.index_add(0, groups, dev * dev).div_(count_d).sqrt_()
    inv = _fast_inverse_std(std, mean, eps).mul_((count - 1.0).clamp_(0.0, 1.0))  # 0 unless >= 2 rollouts
    advantages = dev.mul_(inv.index_select(0, groups))
    if singleton is SingletonRule.RAW:  # a singleton cell has dev == 0 exactly: add its raw reward
        advantages.addcmul_(reward, (count == 1).to(wd).index_select(0, groups))
    advantages.add_(0.0)  # no -0

    # --- consistency targets R * vote (penalty if unparseable), z-scored over the requested votes of each step
    dev_t = clean.mul_(reward).add_(failed, alpha=penalty)  # raw targets, 0 where no vote was requested
    mean_t = dev_t.sum(0).div_(denom)
    dev_t.addcmul_(asked, mean_t, value=-1.0)  # centred, still 0 where no vote was requested
    var_t = torch.zeros_like(mean_t)
    for plane in dev_t:
        var_t.addcmul_(plane, plane)
    inv_t = _fast_inverse_std(var_t.div_(denom).sqrt_(), mean_t, eps)
    targets = torch.empty((b, s, m), dtype=wd, device=device)
    torch.addcmul(torch.zeros((), dtype=wd, device=device), dev_t.permute(1, 2, 0), inv_t.unsqueeze(-1), out=targets)
    return FeedbackTargets(advantages.to(dtype), targets.to(dtype))


def batch_advantages_and_consistency(
    batch: StepBatch,
    *,
    lam: float = 1.0,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
    format_penalty: float = FORMAT_PENALTY,
) -> FeedbackTargets:
    """:func:`integrated_advantages_and_consistency` on the tensors of a :class:`StepBatch` with votes.

    Args:
        batch: a :class:`StepBatch` with ``votes``, ``vote_mask`` and ``vote_valid``.
        lam: weight of the judge's mean vote.
        eps: degenerate-std threshold.
        singleton: rule for a (group, step) cell reached by one rollout.
        format_penalty: raw consistency reward of an unparseable vote.

    Returns:
        :class:`FeedbackTargets` ``(advantages (B, S), targets (B, S, M))``.
    """
    if not isinstance(batch, StepBatch):
        raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
    if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
        raise ValueError("batch: expected judge votes (votes, vote_mask, vote_valid), got a batch without votes")
    return integrated_advantages_and_consistency(
        batch.outcome,
        batch.step_mask,
        batch.group_index,
        batch.votes,
        batch.vote_mask,
        batch.vote_valid,
        lam=lam,
        eps=eps,
        singleton=singleton,
        format_penalty=format_penalty,
    )
