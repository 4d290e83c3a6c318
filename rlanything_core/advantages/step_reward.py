"""``StepReward``: the integrated step reward ``R = O + lam * mean(votes)``, one part owning ``lam`` (arXiv 2602.02488).

The loop computes ``R`` once per iteration and hands the same tensor to the policy's integrator (which standardizes
it per step index) and to the judge's consistency targets (``R * vote``), so the two models always see one ``R``:
an integrator cannot change the judge's targets, and ``lam`` is set in one place.
"""

from __future__ import annotations

from torch import Tensor

from rlanything_core.advantages._checks import check_nonnegative_scalar
from rlanything_core.advantages.functional import integrated_step_reward
from rlanything_core.types import StepBatch

__all__ = ["StepReward"]


class StepReward:
    """Integrated feedback ``R_{tau_i} = O_tau + lam * mean_j S_{tau_i,j}`` of every step of a batch.

    A thin class over :func:`~rlanything_core.advantages.functional.integrated_step_reward` holding ``lam``.

    Args:
        lam: weight of the judge's step-wise signal, finite and ``>= 0`` (paper default 1; for ``lam <= 1`` the step
            reward never contradicts the outcome).

    Examples:
        >>> import torch
        >>> step_mask = torch.ones(2, 1, dtype=torch.bool)
        >>> votes = torch.tensor([[[1.0, 1.0]], [[1.0, -1.0]]])
        >>> vote_mask = torch.ones(2, 1, 2, dtype=torch.bool)
        >>> batch = StepBatch(torch.tensor([1.0, 1.0]), step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_mask)
        >>> StepReward(lam=0.5)(batch)
        tensor([[1.5000],
                [1.0000]])
    """

    def __init__(self, *, lam: float = 1.0) -> None:
        self.lam = check_nonnegative_scalar("lam", lam)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lam={self.lam})"

    def __call__(self, batch: StepBatch) -> Tensor:
        """``(B, S)`` step rewards of ``batch`` (0 at padding).

        Raises:
            ValueError: ``batch`` is not a ``StepBatch`` with judge votes.
        """
        if not isinstance(batch, StepBatch):
            raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
        if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
            raise ValueError("batch: expected judge votes (votes, vote_mask, vote_valid), got a batch without votes")
        return integrated_step_reward(
            batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid, lam=self.lam
        )
