"""The judge's targets, its final advantages, built once per iteration (arXiv 2602.02488): one part per setting family.

``ConsistencyTargets`` (agent settings: the judge votes on steps) and ``UnitTestTargets`` (coding: the judge writes
unit tests) share what the loop reads of them besides the targets: ``drop_zero_rows``, whether rows with a zero target
exist at all. Their inputs differ (a vote grid and the step reward; one task's pass matrices).

``ConsistencyTargets`` is a thin class over the pure functions of ``rewards.consistency``: it holds its
hyperparameters (``format_penalty``, ``eps``, ...) and applies them to a ``StepBatch``::

    step_reward R (B, S) --consistency_targets--> raw R * S or format_penalty (B, S, M)
                         --standardize_votes-->   z-scored over the m votes of each step (B, S, M)
                         --[vote_mask]-->         one advantage per judge row (N,), N = vote_mask.sum()

Row order: the judge's training rows are its outputs, one per *requested* vote, in the row-major order of
``batch.vote_mask.nonzero()`` (rollout, then step, then vote), which is also the order of ``tensor[batch.vote_mask]``.

The loop builds the targets here once (``loop.iteration.build_iteration``, on the step reward
``advantages.step_reward.StepReward`` that the policy's integrator standardizes too) and hands the judge rows to the
module with these advantages, where the judge trains with a plain ``losses.PolicyLoss``; ``drop_zero_rows`` decides
which rows exist at all. ``losses.ConsistencyRewardLoss`` composes this class with the clipped objective for users
who call the loss on a whole batch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlanything_core._validation import check_floating, check_number, check_shape, check_tensor
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.masking import masked_mean
from rlanything_core.rewards.consistency import (
    balanced_step_weights,
    consistency_targets,
    standardize_votes,
    vote_agreement,
)
from rlanything_core.rewards.unit_tests import standardize_unit_test_rewards, unit_test_rewards
from rlanything_core.types import StepBatch

__all__ = ["ConsistencyTargets", "UnitTestTargets", "batch_votes"]


def _check_flags(**flags: object) -> None:
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise ValueError(f"{name}: expected a bool, got {flag!r}")


class ConsistencyTargets:
    """Raw and standardized consistency targets of every requested judge vote.

    For the judge output ``j`` at step ``i`` of rollout ``tau``: raw target ``R_{tau_i} * S_{tau_i,j}`` for a valid
    vote, ``format_penalty`` for an unparseable one; z-scored over the ``m`` outputs of that step (a step whose
    targets have zero variance standardizes to 0).

    With ``balance_outcomes``, each step's standardized targets are then weighted so that a task group's won and
    failed episodes' steps carry equal total weight (``rewards.consistency.balanced_step_weights``): the judge's
    expected push no longer depends on how many steps won and failed episodes have. A departure from the paper
    (arXiv 2602.02488 weights every step alike), off by default here; ``docs/results.md`` says when it is chosen and
    why.

    Args:
        format_penalty: raw target of an unparseable judge output.
        eps: degenerate-std threshold of the per-step standardization, ``>= 0``.
        balance_outcomes: weight won and failed episodes' steps equally per task group.
        drop_zero_rows: the loop leaves out judge rows whose standardized target is exactly 0 (the authors' choice:
            no signal, all cost); ``False`` trains on them too (they add KL and tokens to the loss's denominators).

    Examples:
        >>> import torch
        >>> step_mask = torch.ones(1, 1, dtype=torch.bool)
        >>> votes = torch.tensor([[[1.0, -1.0, 0.0]]])
        >>> mask = torch.ones(1, 1, 3, dtype=torch.bool)
        >>> valid = torch.tensor([[[True, True, False]]])
        >>> batch = StepBatch(torch.tensor([1.0]), step_mask, torch.tensor([0]), votes, mask, valid)
        >>> ConsistencyTargets().rows(batch, torch.tensor([[1.5]]))
        tensor([ 1.4018, -0.5392, -0.8627])
    """

    def __init__(
        self,
        *,
        format_penalty: float = FORMAT_PENALTY,
        eps: float = EPS,
        balance_outcomes: bool = False,
        drop_zero_rows: bool = True,
    ) -> None:
        self.eps = check_number("eps", eps, ge=0.0)  # refuses NaN/inf, which ``eps < 0`` lets through
        self.format_penalty = check_number("format_penalty", format_penalty)
        _check_flags(balance_outcomes=balance_outcomes, drop_zero_rows=drop_zero_rows)
        self.balance_outcomes = balance_outcomes
        self.drop_zero_rows = drop_zero_rows

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(format_penalty={self.format_penalty}, eps={self.eps}, "
            f"balance_outcomes={self.balance_outcomes}, drop_zero_rows={self.drop_zero_rows})"
        )

    def __call__(self, batch: StepBatch, step_reward: Tensor) -> tuple[Tensor, Tensor]:
        """Raw and standardized targets on the vote grid.

        Args:
            batch: a ``StepBatch`` with votes.
            step_reward: ``(B, S)`` floating integrated step rewards ``R_{tau_i}`` (``StepReward``).

        Returns:
            ``(raw, standardized)``, both ``(B, S, M)``; 0 outside ``vote_mask``. With ``balance_outcomes`` the
            standardized targets carry the steps' balancing weights.
        """
        votes, vote_mask, vote_valid = batch_votes(batch)
        check_tensor("step_reward", step_reward)
        check_floating("step_reward", step_reward)
        check_shape("step_reward", step_reward, tuple(batch.step_mask.shape))
        raw = consistency_targets(step_reward, votes, vote_mask, vote_valid, format_penalty=self.format_penalty)
        standardized = standardize_votes(raw, vote_mask, eps=self.eps)
        if self.balance_outcomes:
            weights = balanced_step_weights(batch.outcome, batch.step_mask, batch.group_index)
            standardized = standardized * weights.to(standardized.dtype).unsqueeze(-1)
        return raw, standardized

    def rows(self, batch: StepBatch, step_reward: Tensor) -> Tensor:
        """``(N,)`` standardized targets in row order (``vote_mask.nonzero()`` order): the judge rows' advantages."""
        _, standardized = self(batch, step_reward)
        return standardized[batch_votes(batch)[1]]

    @staticmethod
    def metrics(batch: StepBatch, raw: Tensor) -> dict[str, Tensor]:
        """Scalars about the whole batch's votes (no grad).

        Returns:
            ``target_mean`` (raw targets of requested votes), ``format_failure_rate``, ``vote_agreement`` (valid
            votes whose sign equals ``sign(O)``) and ``num_rows`` (requested votes).
        """
        votes, vote_mask, vote_valid = batch_votes(batch)
        with torch.no_grad():
            requested = vote_mask.sum()
            failures = (vote_mask & ~vote_valid).sum()
            return {
                "target_mean": masked_mean(raw, vote_mask).detach(),
                "format_failure_rate": failures.to(raw.dtype) / requested.clamp(min=1).to(raw.dtype),
                "vote_agreement": torch.as_tensor(vote_agreement(votes, vote_valid, batch.outcome)).detach(),
                "num_rows": requested,
            }


def batch_votes(batch: StepBatch) -> tuple[Tensor, Tensor, Tensor]:
    """``(votes, vote_mask, vote_valid)`` of ``batch``; ``ValueError`` when it is not a ``StepBatch`` with votes."""
    if not isinstance(batch, StepBatch):
        raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
    if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
        raise ValueError("batch: expected a StepBatch with votes, vote_mask and vote_valid, got one without votes")
    return batch.votes, batch.vote_mask, batch.vote_valid


class UnitTestTargets:
    """Standardized unit-test rewards of one task's generated tests: the judge's targets in the coding setting.

    Raw rewards from :func:`~rlanything_core.rewards.unit_tests.unit_test_rewards` (how well each test separates the
    task's correct programs from the wrong ones; ``format_penalty`` for an unparseable one), z-scored over the task's
    tests (:func:`~rlanything_core.rewards.unit_tests.standardize_unit_test_rewards`).

    Args:
        format_penalty: raw reward of an unparseable test.
        eps: degenerate-std threshold of the standardization, ``> 0``.
        format_without_reference: a task without a correct program still rewards its tests' format (parsed 0,
            unparseable the penalty); ``False``: the authors' rule, such a task gives the judge nothing.
        drop_zero_rows: the loop leaves out tests whose standardized reward is exactly 0.

    Examples:
        >>> import torch
        >>> gt = torch.tensor([[True], [False], [False]])          # program 0 correct, programs 1-2 wrong
        >>> gen = torch.tensor([[True, True, False], [False, True, False], [False, True, False]])
        >>> UnitTestTargets()(gt, gen, torch.tensor([True, True, False]))
        tensor([ 1.1355,  0.1622, -1.2978])
    """

    def __init__(
        self,
        *,
        format_penalty: float = FORMAT_PENALTY,
        eps: float = EPS,
        format_without_reference: bool = False,
        drop_zero_rows: bool = True,
    ) -> None:
        self.format_penalty = check_number("format_penalty", format_penalty)
        self.eps = check_number("eps", eps, gt=0.0)
        _check_flags(format_without_reference=format_without_reference, drop_zero_rows=drop_zero_rows)
        self.format_without_reference = format_without_reference
        self.drop_zero_rows = drop_zero_rows

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(format_penalty={self.format_penalty}, eps={self.eps}, "
            f"format_without_reference={self.format_without_reference}, drop_zero_rows={self.drop_zero_rows})"
        )

    def __call__(self, gt_pass: Tensor, gen_pass: Tensor, parsed: Tensor) -> Tensor | None:
        """``(K,)`` standardized rewards of the task's ``K`` generated tests, or ``None`` without a reference.

        Args:
            gt_pass: ``(C, T_gt)`` bool, programs x ground-truth tests.
            gen_pass: ``(C, K)`` bool, programs x generated tests.
            parsed: ``(K,)`` bool, the generated test parsed.

        Returns:
            The targets, or ``None`` when no program is correct and ``format_without_reference`` is off.
        """
        raw = unit_test_rewards(
            gt_pass,
            gen_pass,
            parsed,
            format_penalty=self.format_penalty,
            format_without_reference=self.format_without_reference,
        )
        return None if raw is None else standardize_unit_test_rewards(raw, eps=self.eps)
