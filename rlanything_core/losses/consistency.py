"""``ConsistencyRewardLoss``: train the generative judge with consistency feedback (arXiv 2602.02488).

A facade for users who call the judge's loss on a whole batch: the judge's targets plus the policy objective,

    ConsistencyRewardLoss(logprobs, old, mask, batch=, step_reward=)
        == PolicyLoss(logprobs, old, ConsistencyTargets(batch, step_reward)[rows], mask & (advantage != 0))

The training loop does not call it: it builds the targets once per iteration (``rewards.ConsistencyTargets`` on the
shared ``advantages.step_reward.StepReward``, in ``loop.iteration.build_iteration``) and trains the judge with a plain
``PolicyLoss`` on rows whose advantages are final, with the same signature as the policy.

Row order: the judge's training rows are its outputs, one per *requested* vote, in the row-major order of
``batch.vote_mask.nonzero()`` (rollout, then step, then vote), which is also the order of ``tensor[batch.vote_mask]``.
Row ``r`` of ``logprobs`` is the judge output of cell ``batch.vote_mask.nonzero()[r]``. For micro-batching pass
``rows``: the indices (into that order) of the rows in this call.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rlanything_core._validation import check_bool, check_index, check_shape, check_tensor
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.losses.aggregation import Aggregation
from rlanything_core.losses.functional import KLEstimator
from rlanything_core.losses.policy import KLReference, PolicyLoss
from rlanything_core.rewards.targets import ConsistencyTargets, batch_votes
from rlanything_core.types import LossOutput, StepBatch

__all__ = ["ConsistencyRewardLoss"]


def _rows_of(adv: Tensor, rows: Tensor | None) -> Tensor:
    """The advantages of the requested votes ``rows`` (a micro-batch), or all of them without ``rows``.

    Raises:
        ValueError: ``rows`` is not a 1-D int tensor of indices below ``len(adv)``.
    """
    if rows is None:
        return adv
    total = int(adv.shape[0])
    check_tensor("rows", rows)
    check_index("rows", rows)
    check_shape("rows", rows, (None,))
    if rows.numel() and int(rows.max()) >= total:
        raise ValueError(f"rows: expected indices < {total} (requested votes), got max {int(rows.max())}")
    return adv[rows.to(torch.int64)]


def _check_judge_tokens(logprobs: Tensor, response_mask: Tensor, num_rows: int, *, in_rows: bool) -> None:
    """Raise a ``ValueError`` unless ``logprobs`` is ``(num_rows, L)`` and ``response_mask`` a bool of its shape."""
    check_tensor("logprobs", logprobs)
    if logprobs.dim() != 2 or logprobs.shape[0] != num_rows:
        raise ValueError(
            f"logprobs: expected shape ({num_rows}, L) (one row per requested vote"
            f"{' in rows' if in_rows else ''}), got {tuple(logprobs.shape)}"
        )
    check_tensor("response_mask", response_mask)
    check_bool("response_mask", response_mask)
    check_shape("response_mask", response_mask, tuple(logprobs.shape))


class ConsistencyRewardLoss(nn.Module):
    """Clipped policy-gradient loss of the judge, with advantages from consistency rewards.

    For the judge output ``j`` at step ``i`` of rollout ``tau``: raw target ``R_{tau_i} * S_{tau_i,j}`` for a valid
    vote, ``format_penalty`` for an unparseable one; z-scored over the ``m`` outputs of that step (a group with zero
    variance standardizes to 0 and contributes nothing); then the same clipped objective as ``PolicyLoss`` on the
    judge's tokens.

    Args:
        format_penalty: raw target of an unparseable judge output.
        eps: degenerate-std threshold of the per-step standardization.
        drop_zero_advantage: mask out rows whose advantage is exactly 0 (the authors drop them from the training set),
            so they add neither KL nor tokens to the denominators. With micro-batching, count ``num_tokens_global`` /
            ``num_seqs_global`` over the kept rows only (``row_advantages(...) != 0``), or better, do not generate
            log-probabilities for those rows at all and pass the kept indices as ``rows``. The training loop does the
            latter, with ``ConsistencyTargets(drop_zero_rows=...)``.
        clip_eps_low: see ``PolicyLoss``.
        clip_eps_high: see ``PolicyLoss``.
        log_ratio_clamp: see ``PolicyLoss``.
        kl_coef: see ``PolicyLoss``.
        kl_estimator: see ``PolicyLoss``.
        kl_reference: see ``PolicyLoss``.
        aggregation: see ``PolicyLoss`` (default: the authors' per-sample token mean).
    """

    def __init__(
        self,
        *,
        format_penalty: float = FORMAT_PENALTY,
        eps: float = EPS,
        drop_zero_advantage: bool = True,
        clip_eps_low: float = 0.2,
        clip_eps_high: float = 0.2,
        log_ratio_clamp: float = 10.0,
        kl_coef: float = 0.01,
        kl_estimator: KLEstimator = KLEstimator.K3,
        kl_reference: KLReference = KLReference.ROLLOUT,
        aggregation: Aggregation = Aggregation.SEQ_MEAN_TOKEN_MEAN,
    ) -> None:
        super().__init__()
        self.target_builder = ConsistencyTargets(format_penalty=format_penalty, eps=eps)
        self.drop_zero_advantage = drop_zero_advantage
        self.objective = PolicyLoss(
            clip_eps_low=clip_eps_low,
            clip_eps_high=clip_eps_high,
            log_ratio_clamp=log_ratio_clamp,
            kl_coef=kl_coef,
            kl_estimator=kl_estimator,
            kl_reference=kl_reference,
            aggregation=aggregation,
        )

    @property
    def format_penalty(self) -> float:
        """Raw target of an unparseable judge output (``target_builder.format_penalty``)."""
        return self.target_builder.format_penalty

    @property
    def eps(self) -> float:
        """Degenerate-std threshold of the per-step standardization (``target_builder.eps``)."""
        return self.target_builder.eps

    def targets(self, batch: StepBatch, step_reward: Tensor) -> tuple[Tensor, Tensor]:
        """Raw and standardized consistency targets on the vote grid (``ConsistencyTargets.__call__``).

        Args:
            batch: a ``StepBatch`` with votes.
            step_reward: ``(B, S)`` integrated step rewards ``R_{tau_i}`` (e.g. ``integrated_step_reward``).

        Returns:
            ``(raw, standardized)``, both ``(B, S, M)``; 0 outside ``vote_mask``.
        """
        return self.target_builder(batch, step_reward)

    def row_advantages(self, batch: StepBatch, step_reward: Tensor) -> Tensor:
        """``(N_rows,)`` standardized targets in row order (``vote_mask.nonzero()`` order)."""
        return self.target_builder.rows(batch, step_reward)

    def forward(
        self,
        logprobs: Tensor,
        old_logprobs: Tensor,
        response_mask: Tensor,
        *,
        batch: StepBatch,
        step_reward: Tensor,
        rows: Tensor | None = None,
        ref_logprobs: Tensor | None = None,
        num_tokens_global: int | None = None,
        num_seqs_global: int | None = None,
    ) -> LossOutput:
        """Compute the judge loss.

        Args:
            logprobs: ``(N, L)`` judge log-probabilities of its outputs (with grad); ``N = len(rows)`` or, without
                ``rows``, the number of requested votes ``batch.vote_mask.sum()``.
            old_logprobs: ``(N, L)`` at sampling time.
            response_mask: ``(N, L)`` bool, the judge's output tokens.
            batch: the ``StepBatch`` the votes belong to (whole batch, not the micro-batch).
            step_reward: ``(B, S)`` integrated step rewards.
            rows: ``(N,)`` int64 indices into the row order, for micro-batching.
            ref_logprobs: frozen-reference log-probabilities (``kl_reference=FROZEN``).
            num_tokens_global: see ``PolicyLoss``.
            num_seqs_global: see ``PolicyLoss``.

        Returns:
            ``LossOutput`` with the objective's metrics plus, over the whole batch: ``target_mean`` (raw targets of
            requested votes), ``format_failure_rate``, ``vote_agreement`` (valid votes whose sign equals ``sign(O)``),
            ``num_rows``, and ``num_zero_advantage_rows`` (in this call).
        """
        vote_mask = batch_votes(batch)[1]
        raw, standardized = self.targets(batch, step_reward)
        adv = _rows_of(standardized[vote_mask], rows)
        _check_judge_tokens(logprobs, response_mask, adv.shape[0], in_rows=rows is not None)
        adv = adv.to(logprobs.dtype)
        zero_rows = adv == 0
        mask = response_mask & ~zero_rows.unsqueeze(1) if self.drop_zero_advantage else response_mask
        out: LossOutput = self.objective(
            logprobs,
            old_logprobs,
            adv,
            mask,
            ref_logprobs=ref_logprobs,
            num_tokens_global=num_tokens_global,
            num_seqs_global=num_seqs_global,
        )
        out.metrics.update(self.target_builder.metrics(batch, raw))
        out.metrics["num_zero_advantage_rows"] = zero_rows.sum()
        return out
