"""The data model: ragged multi-step trajectories on a right-padded (rollout, step[, vote]) grid.

Axes: task group ``g`` -> rollout ``b`` (flattened to ``B`` with ``group_index``) -> step ``s`` -> judge vote ``m``.
Groups are never reshaped with ``view(-1, G)``: filtering tasks by success rate makes groups uneven, so every
group statistic goes through ``group_index``. Padding positions may hold anything (NaN included); every function in
the library selects with the masks and never multiplies by them, so padding cannot change an output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

__all__ = ["LossOutput", "StepBatch"]


@dataclass(frozen=True)
class StepBatch:
    """Outcomes, step grid and judge votes of ``B`` rollouts, validated on construction.

    Attributes:
        outcome: ``(B,)`` float, the verifiable outcome ``O`` of each rollout (``+1`` success, ``-1`` failure in the
            paper; any finite value is accepted).
        step_mask: ``(B, S)`` bool, ``True`` for the steps a rollout took. Right-padded: each row is a prefix.
        group_index: ``(B,)`` int64, the task group of each rollout (any non-negative ids, groups of any size).
        votes: ``(B, S, M)`` float or ``None``. Judge votes ``S_{tau_i,j}``; meaningful (``+1``/``-1``) only where
            ``vote_valid``.
        vote_mask: ``(B, S, M)`` bool or ``None``: ``True`` where a vote was requested (a judge output exists).
            Must lie inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool or ``None``: ``True`` where that output parsed to ``+1``/``-1``. Must lie
            inside ``vote_mask``; ``vote_mask & ~vote_valid`` are format failures (kept, counted, penalized).

    Examples:
        >>> import torch
        >>> batch = StepBatch(
        ...     outcome=torch.tensor([1.0, -1.0]),
        ...     step_mask=torch.tensor([[True, True], [True, False]]),
        ...     group_index=torch.tensor([0, 0]),
        ... )
        >>> batch.num_rollouts, batch.max_steps, batch.has_votes
        (2, 2, False)
    """

    outcome: Tensor
    step_mask: Tensor
    group_index: Tensor
    votes: Tensor | None = None
    vote_mask: Tensor | None = None
    vote_valid: Tensor | None = None
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        outcome = check_tensor("outcome", self.outcome)
        step_mask = check_tensor("step_mask", self.step_mask)
        group_index = check_tensor("group_index", self.group_index)
        check_floating("outcome", outcome)
        check_shape("outcome", outcome, (None,))
        (b,) = outcome.shape
        check_bool("step_mask", step_mask)
        check_shape("step_mask", step_mask, (b, None))
        check_index("group_index", group_index)
        check_shape("group_index", group_index, (b,))
        check_finite_where("outcome", outcome, torch.ones_like(outcome, dtype=torch.bool))
        if step_mask.shape[1] > 1 and bool((step_mask[:, 1:] & ~step_mask[:, :-1]).any()):
            raise ValueError("step_mask: expected right padding (each row a prefix of True), got a gap")
        vote_fields = (self.votes, self.vote_mask, self.vote_valid)
        if all(v is None for v in vote_fields):
            return
        if any(v is None for v in vote_fields):
            raise ValueError("votes, vote_mask, vote_valid: give all three or none")
        votes = check_tensor("votes", self.votes)
        vote_mask = check_tensor("vote_mask", self.vote_mask)
        vote_valid = check_tensor("vote_valid", self.vote_valid)
        s = step_mask.shape[1]
        check_floating("votes", votes)
        check_shape("votes", votes, (b, s, None))
        m = votes.shape[2]
        if m < 1:  # m = 0 would silently give outcome-only advantages where votes were meant to count
            raise ValueError(f"votes: expected m >= 1 vote slots, got shape {tuple(votes.shape)}; pass votes=None "
                             "(and no vote_mask/vote_valid) for a batch without judge votes")
        check_bool("vote_mask", vote_mask)
        check_shape("vote_mask", vote_mask, (b, s, m))
        check_bool("vote_valid", vote_valid)
        check_shape("vote_valid", vote_valid, (b, s, m))
        if bool((vote_mask & ~step_mask.unsqueeze(-1)).any()):
            raise ValueError("vote_mask: a vote is marked at a padded step (vote_mask must lie inside step_mask)")
        if bool((vote_valid & ~vote_mask).any()):
            raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must lie inside vote_mask)")
        check_finite_where("votes", votes, vote_valid)
        off = vote_valid & (votes.abs() != 1.0)
        if bool(off.any()):
            where = tuple(int(i) for i in off.nonzero()[0])
            raise ValueError(f"votes: expected +1 or -1 where vote_valid, got {float(votes[where])} at {where}")

    @property
    def num_rollouts(self) -> int:
        """``B``."""
        return int(self.outcome.shape[0])

    @property
    def max_steps(self) -> int:
        """``S``, the padded step dimension."""
        return int(self.step_mask.shape[1])

    @property
    def has_votes(self) -> bool:
        """Whether judge votes are attached."""
        return self.votes is not None

    @property
    def num_steps(self) -> Tensor:
        """``(B,)`` int64 number of steps of each rollout."""
        return self.step_mask.sum(dim=1)


@dataclass(frozen=True)
class LossOutput:
    """What every loss returns: the scalar to backpropagate and detached metrics to log.

    Attributes:
        loss: scalar tensor (with grad when the inputs had it).
        metrics: name -> scalar tensor, detached.
    """

    loss: Tensor
    metrics: dict[str, Tensor] = field(default_factory=dict)
