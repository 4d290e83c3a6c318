"""Integrators: the policy's per-step advantages from a :class:`StepBatch`, one signature for all variants.

Every integrator maps ``(batch, step_reward) -> (B, S)`` advantages: take or build a step reward, then standardize it
per (task group, step index) (arXiv 2602.02488). ``step_reward`` is the integrated reward ``R = O + lam * mean(votes)``
of :class:`~rlanything_core.advantages.step_reward.StepReward`, computed once per iteration by the loop and shared
with the judge's consistency targets: no integrator owns ``lam``, so none can give the policy an ``R`` other than
the judge's. Variants are classes (chosen by Hydra with ``_target_``), not string switches; each declares whether it
needs judge votes (``needs_votes``), which the loop and the config checks read instead of matching class names.

- :class:`OutcomeOnlyIntegrator`: ``R = O`` ("Outcome Only (GRPO)"); ignores ``step_reward``.
- :class:`IntegratedIntegrator`: standardizes the given ``step_reward`` (integrated feedback).
- :class:`StepOnlyIntegrator`: ``R = mean_j S_j`` (an optimized judge's signal alone); ignores ``step_reward``.
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from torch import Tensor

from rlanything_core._validation import check_floating, check_shape, check_tensor
from rlanything_core.advantages._checks import check_nonnegative_scalar
from rlanything_core.advantages.functional import (
    SingletonRule,
    outcome_step_reward,
    standardize_per_step,
    step_only_reward,
)
from rlanything_core.constants import EPS
from rlanything_core.types import StepBatch

__all__ = ["Integrator", "IntegratedIntegrator", "OutcomeOnlyIntegrator", "StepOnlyIntegrator"]


@runtime_checkable
class Integrator(Protocol):
    """Anything that maps a :class:`StepBatch` and its step reward to ``(B, S)`` advantages (0 at padding).

    Attributes:
        needs_votes: whether the advantages depend on judge votes (a batch without votes is refused, and a config
            whose arm has no judge is refused before any work).
    """

    needs_votes: ClassVar[bool]

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        """Return ``(B, S)`` advantages; ``step_reward`` is the ``(B, S)`` ``R = O + lam * mean(votes)`` or ``None``."""
        ...


def _check_batch(batch: object, *, needs_votes: bool) -> StepBatch:
    if not isinstance(batch, StepBatch):
        raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
    if needs_votes and not batch.has_votes:
        raise ValueError("batch: expected judge votes (votes, vote_mask, vote_valid), got a batch without votes")
    return batch


class _Standardizing:
    needs_votes: ClassVar[bool] = False

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
    """GRPO: ``R = O`` at every step, standardized per step index (equals ``IntegratedIntegrator`` at ``lam = 0``).

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

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        """Return ``(B, S)`` advantages of ``batch`` (votes and ``step_reward``, if any, are ignored)."""
        batch = _check_batch(batch, needs_votes=False)
        return self.standardize(outcome_step_reward(batch.outcome, batch.step_mask), batch)


class IntegratedIntegrator(_Standardizing):
    """Integrated feedback: the step reward ``R = O + lam * mean_j S_j`` standardized per step index. arXiv 2602.02488.

    ``R`` comes in built (``StepReward``, which owns ``lam``): the loop computes it once and the judge's consistency
    targets use the same tensor.

    Args:
        eps: degenerate-std threshold.
        singleton: rule for a step index reached by one rollout of its group.

    Examples:
        >>> import torch
        >>> from rlanything_core.advantages.step_reward import StepReward
        >>> step_mask = torch.ones(2, 1, dtype=torch.bool)
        >>> votes = torch.tensor([[[1.0, 1.0]], [[1.0, -1.0]]])
        >>> vote_mask = torch.ones(2, 1, 2, dtype=torch.bool)
        >>> batch = StepBatch(torch.tensor([1.0, 1.0]), step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_mask)
        >>> IntegratedIntegrator()(batch, StepReward(lam=1.0)(batch))
        tensor([[ 1.],
                [-1.]])
    """

    needs_votes: ClassVar[bool] = True

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        """Return ``(B, S)`` advantages: ``step_reward`` standardized per (task group, step index).

        Raises:
            ValueError: ``batch`` has no votes, or ``step_reward`` is missing or not a ``(B, S)`` float tensor.
        """
        batch = _check_batch(batch, needs_votes=True)
        if step_reward is None:
            raise ValueError(
                "step_reward: expected the (B, S) step reward R = O + lam * mean(votes) "
                "(advantages.step_reward.StepReward), got None"
            )
        check_tensor("step_reward", step_reward)
        check_floating("step_reward", step_reward)
        check_shape("step_reward", step_reward, tuple(batch.step_mask.shape))
        return self.standardize(step_reward, batch)


class StepOnlyIntegrator(_Standardizing):
    """Step-only signal ``R = mean_j S_j`` (votes of an optimized judge, no outcome), standardized per step index.

    Args:
        eps: degenerate-std threshold.
        singleton: rule for a step index reached by one rollout of its group.
    """

    needs_votes: ClassVar[bool] = True

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        """Return ``(B, S)`` advantages of ``batch`` (``step_reward`` is ignored); ``ValueError`` without votes."""
        batch = _check_batch(batch, needs_votes=True)
        assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
        reward = step_only_reward(batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid)
        return self.standardize(reward, batch)
