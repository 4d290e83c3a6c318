"""Task-level difficulty filters: keep only tasks whose group success rate lies in a band (arXiv 2602.02488).

The policy learns only from tasks with ``1/8 <= acc <= 7/8`` (AlfWorld; with 8 rollouts: 1..7 successes), the reward
model only from tasks with ``0.2 <= acc <= 0.8`` (the balanced band motivated by Theorem 2). Both edges are
INCLUSIVE, as in the authors' code: with 8 rollouts, 1 success (acc = 1/8) is kept; a task every rollout solves or
every rollout fails has no contrast and is dropped.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlanything_core._validation import check_band, check_floating, check_tensor
from rlanything_core.advantages.functional import group_success_rate
from rlanything_core.types import StepBatch

__all__ = ["JUDGE_BAND", "POLICY_BAND", "TaskBandFilter", "in_band"]

POLICY_BAND: tuple[float, float] = (1 / 8, 7 / 8)
"""Success-rate band of the tasks that feed the policy (AlfWorld config; coding uses ``(0.2, 0.8)``)."""

JUDGE_BAND: tuple[float, float] = (0.2, 0.8)
"""Success-rate band of the tasks that feed the reward model (judge)."""


def in_band(success_rate: Tensor, band: tuple[float, float] = (0.2, 0.8)) -> Tensor:
    """Whether each success rate lies in ``[low, high]`` (inclusive at both edges, as the authors' code).

    Args:
        success_rate: any shape, floating, values in ``[0, 1]``.
        band: ``(low, high)`` with ``0 <= low <= high <= 1``.

    Returns:
        bool tensor shaped like ``success_rate``.

    Examples:
        >>> import torch
        >>> in_band(torch.tensor([0.0, 0.2, 0.5, 0.8, 1.0]))
        tensor([False,  True,  True,  True, False])
    """
    rate = check_tensor("success_rate", success_rate)
    check_floating("success_rate", rate)
    if bool(((rate < 0) | (rate > 1) | rate.isnan()).any()):
        raise ValueError("success_rate: expected values in [0, 1]")
    low, high = check_band("band", band)
    return (rate >= low) & (rate <= high)


class TaskBandFilter:
    """Rollout keep-mask from the success rate of each rollout's task group.

    Args:
        band: inclusive ``(low, high)`` success-rate band; :data:`POLICY_BAND` by default, :data:`JUDGE_BAND` for the
            reward model's data.

    Examples:
        >>> import torch
        >>> batch = StepBatch(
        ...     outcome=torch.tensor([1.0, -1.0, 1.0, 1.0]),
        ...     step_mask=torch.ones(4, 1, dtype=torch.bool),
        ...     group_index=torch.tensor([0, 0, 1, 1]),
        ... )
        >>> TaskBandFilter()(batch)
        tensor([ True,  True, False, False])
    """

    def __init__(self, *, band: tuple[float, float] = POLICY_BAND) -> None:
        self.band = check_band("band", band)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(band={self.band})"

    def __call__(self, batch: StepBatch) -> Tensor:
        """Return the ``(B,)`` bool keep-mask of ``batch``'s rollouts."""
        if not isinstance(batch, StepBatch):
            raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
        # float64 from the counts: a float32 rate (4/5 -> 0.80000001) would fall off an inclusive edge of the band
        rate = group_success_rate(batch.outcome, batch.group_index, dtype=torch.float64)
        return in_band(rate, self.band)
