"""Integrators: the policy's per-step advantages from a :class:`StepBatch`, one signature for all variants.

Every integrator maps ``batch -> (B, S)`` advantages: build a step reward, then standardize it per (task group, step
index) (arXiv 2602.02488). Variants are classes (chosen by Hydra with ``_target_``), not string switches.

- :class:`OutcomeOnlyIntegrator`: ``R = O`` ("Outcome Only (GRPO)").
- :class:`IntegratedIntegrator`: ``R = O + lam * mean_j S_j`` (integrated feedback).
- :class:`StepOnlyIntegrator`: ``R = mean_j S_j`` (an optimized judge's signal alone).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor

from rlanything_core.advantages._checks import check_nonnegative_scalar
from rlanything_core.advantages.functional import (
    SingletonRule,
    integrated_step_reward,
    outcome_step_reward,
    standardize_per_step,
    step_only_reward,
)
from rlanything_core.constants import EPS
from rlanything_core.types import StepBatch

__all__ = ["Integrator", "IntegratedIntegrator", "OutcomeOnlyIntegrator", "StepOnlyIntegrator"]


@runtime_checkable
class Integrator(Protocol):
    """Anything that maps a :class:`StepBatch` to ``(B, S)`` advantages (0 at padding)."""

    def __call__(self, batch: StepBatch) -> Tensor:
        """Return ``(B, S)`` advantages."""
        ...


def _check_batch(batch: object, *, needs_votes: bool) -> StepBatch:
    if not isinstance(batch, StepBatch):
        raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
    if needs_votes and not batch.has_votes:
        raise ValueError("batch: expected judge votes (votes, vote_mask, vote_valid), got a batch without votes")
    return batch


class _Standardizing:
    def __init__(self, *, eps: float = EPS, singleton: SingletonRule = SingletonRule.ZERO) -> None:
        self.eps = check_nonnegative_scalar("eps", eps)
        if not isinstance(singleton, SingletonRule):
            raise ValueError(f"singleton: expected a SingletonRule, got {singleton!r}")
        self.singleton = singleton

    def standardize(self, reward: Tensor, batch: StepBatch) -> Tensor:
        """``(B, S)`` step rewards -> ``(B, S)`` advantages, z-scored per (task group, step index)."""
        return standardize_per_step(reward, batch.step_mask, batch.group_index, eps=self.eps, singleton=self.singleton)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(eps={self.eps}, singleton={self.singleton})"


class OutcomeOnlyIntegrator(_Standardizing):
    """GRPO: ``R = O`` at every step, standardized per step index (equals ``IntegratedIntegrator(lam=0)``).

    Args:
        eps: degenerate-std threshold.
        singleton: rule for a step index reached by one rollout of its group.

    Examples:
        >>> import torch
        >>> batch = StepBatch(torch.tensor([1.0, -1.0]), torch.ones(2, 2, dtype=torch.bool), torch.tensor([0, 0]))
        >>> OutcomeOnlyIntegrator()(batch)
        tensor([[ 1.,  1.],
                [-1., -1.]])
    """

    def __call__(self, batch: StepBatch) -> Tensor:
        """Return ``(B, S)`` advantages of ``batch`` (votes, if any, are ignored)."""
        batch = _check_batch(batch, needs_votes=False)
        return self.standardize(outcome_step_reward(batch.outcome, batch.step_mask), batch)


class IntegratedIntegrator(_Standardizing):
    """Integrated feedback ``R = O + lam * mean_j S_j``, standardized per step index (arXiv 2602.02488).

    Args:
        lam: weight of the judge's step-wise signal, finite and ``>= 0`` (paper default 1; for ``lam <= 1`` the
            step reward never contradicts the outcome).
        eps: degenerate-std threshold.
        singleton: rule for a step index reached by one rollout of its group.

    Examples:
        >>> import torch
        >>> step_mask = torch.ones(2, 1, dtype=torch.bool)
        >>> votes = torch.tensor([[[1.0, 1.0]], [[1.0, -1.0]]])
        >>> vote_mask = torch.ones(2, 1, 2, dtype=torch.bool)
        >>> batch = StepBatch(torch.tensor([1.0, 1.0]), step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_mask)
        >>> IntegratedIntegrator(lam=1.0)(batch)
        tensor([[ 1.],
                [-1.]])
    """

    def __init__(self, *, lam: float = 1.0, eps: float = EPS, singleton: SingletonRule = SingletonRule.ZERO) -> None:
        super().__init__(eps=eps, singleton=singleton)
        self.lam = check_nonnegative_scalar("lam", lam)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lam={self.lam}, eps={self.eps}, singleton={self.singleton})"

    def __call__(self, batch: StepBatch) -> Tensor:
        """Return ``(B, S)`` advantages of ``batch``; raises ``ValueError`` if it has no votes."""
        return self.standardize(self.step_reward(batch), batch)

    def step_reward(self, batch: StepBatch) -> Tensor:
        """``(B, S)`` integrated step reward ``R = O + lam * mean_j S_j``, before standardization.

        Raises ``ValueError`` if ``batch`` has no votes. The judge's consistency targets use the same ``R``.
        """
        batch = _check_batch(batch, needs_votes=True)
        assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
        return integrated_step_reward(
            batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid, lam=self.lam
        )


class StepOnlyIntegrator(_Standardizing):
    """Step-only signal ``R = mean_j S_j`` (votes of an optimized judge, no outcome), standardized per step index.

    Args:
        eps: degenerate-std threshold.
        singleton: rule for a step index reached by one rollout of its group.
    """

    def __call__(self, batch: StepBatch) -> Tensor:
        """Return ``(B, S)`` advantages of ``batch``; raises ``ValueError`` if it has no votes."""
        batch = _check_batch(batch, needs_votes=True)
        assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
        reward = step_only_reward(batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid)
        return self.standardize(reward, batch)
