"""``PolicyLoss``: the PPO/GRPO clipped surrogate with a KL penalty, as a module holding its hyperparameters."""

from __future__ import annotations

from enum import Enum

import torch
from torch import Tensor, nn

from rlanything_core._validation import check_number
from rlanything_core.losses.aggregation import Aggregation
from rlanything_core.losses.functional import KLEstimator, clipped_policy_objective, overlong_penalty
from rlanything_core.types import LossOutput

__all__ = ["KLReference", "PolicyLoss"]


class KLReference(Enum):
    """What the KL penalty is measured against.

    Attributes:
        ROLLOUT: the sampling policy's ``old_logprobs`` (the authors' code: a trust-region term, not a leash to the
            initial model).
        FROZEN: ``ref_logprobs`` of a frozen reference model (classic RLHF).
    """

    ROLLOUT = "rollout"
    FROZEN = "frozen"


class PolicyLoss(nn.Module):
    """Token-level clipped policy-gradient loss (arXiv 2602.02488) on right-padded ``(N, L)`` tensors.

    Args:
        clip_eps_low: ``eps_low``: ratios below ``1 - eps_low`` are clipped (negative advantages).
        clip_eps_high: ``eps_high``: ratios above ``1 + eps_high`` are clipped (positive advantages); > eps_low is
            DAPO's clip-higher.
        log_ratio_clamp: every log-ratio is clamped to ``[-c, c]`` before ``exp``.
        kl_coef: ``beta``.
        kl_estimator: ``KLEstimator.K1/K2/K3``.
        kl_reference: ``KLReference.ROLLOUT`` (against ``old_logprobs``) or ``FROZEN`` (against ``ref_logprobs``).
        aggregation: an ``Aggregation``. For micro-batching with gradient accumulation pass ``num_tokens_global``
            (TOKEN_MEAN) or ``num_seqs_global`` (SEQ_MEAN_*) to ``forward``; then the micro-batch losses sum to the
            full-batch loss (do not divide them by the number of accumulation steps).
        overlong_max_len: enable DAPO soft overlong punishment with this ``L_max`` (``None``: off).
        overlong_buffer: the soft zone length (required with ``overlong_max_len``).
        overlong_penalty_factor: the penalty at ``L_max``; it is *added to the advantage* of each sequence, with the
            length taken as ``response_mask.sum(1)`` (DAPO adds it to the reward before normalization: for that, use
            ``overlong_penalty`` on the rewards instead).

    Examples:
        >>> import torch
        >>> loss_fn = PolicyLoss(kl_coef=0.0)
        >>> logp = torch.zeros(2, 3, requires_grad=True)
        >>> out = loss_fn(logp, torch.zeros(2, 3), torch.tensor([1.0, -1.0]), torch.ones(2, 3, dtype=torch.bool))
        >>> out.loss
        tensor(0., grad_fn=<DivBackward0>)
    """

    def __init__(
        self,
        *,
        clip_eps_low: float = 0.2,
        clip_eps_high: float = 0.2,
        log_ratio_clamp: float = 10.0,
        kl_coef: float = 0.01,
        kl_estimator: KLEstimator = KLEstimator.K3,
        kl_reference: KLReference = KLReference.ROLLOUT,
        aggregation: Aggregation = Aggregation.SEQ_MEAN_TOKEN_MEAN,
        overlong_max_len: int | None = None,
        overlong_buffer: int | None = None,
        overlong_penalty_factor: float = 1.0,
    ) -> None:
        super().__init__()
        # check_number refuses NaN and inf (``nan < 0`` is False: plain comparisons would accept them)
        clip_eps_low = check_number("clip_eps_low", clip_eps_low, ge=0.0, lt=1.0)
        clip_eps_high = check_number("clip_eps_high", clip_eps_high, ge=0.0)
        log_ratio_clamp = check_number("log_ratio_clamp", log_ratio_clamp, gt=0.0)
        kl_coef = check_number("kl_coef", kl_coef, ge=0.0)
        overlong_penalty_factor = check_number("overlong_penalty_factor", overlong_penalty_factor)
        if not isinstance(kl_estimator, KLEstimator):
            raise ValueError(f"kl_estimator: expected a KLEstimator, got {kl_estimator!r}")
        if not isinstance(kl_reference, KLReference):
            raise ValueError(f"kl_reference: expected a KLReference, got {kl_reference!r}")
        if not isinstance(aggregation, Aggregation):
            raise ValueError(f"aggregation: expected an Aggregation, got {aggregation!r}")
        if (overlong_max_len is None) != (overlong_buffer is None):
            raise ValueError("overlong_buffer: give it together with overlong_max_len (both or neither)")
        if overlong_max_len is not None and overlong_buffer is not None:
            overlong_penalty(
                torch.zeros(0), max_len=overlong_max_len, buffer=overlong_buffer, penalty_factor=overlong_penalty_factor
            )  # validates the three values
        self.clip_eps_low = clip_eps_low
        self.clip_eps_high = clip_eps_high
        self.log_ratio_clamp = log_ratio_clamp
        self.kl_coef = kl_coef
        self.kl_estimator = kl_estimator
        self.kl_reference = kl_reference
        self.aggregation = aggregation
        self.overlong_max_len = overlong_max_len
        self.overlong_buffer = overlong_buffer
        self.overlong_penalty_factor = overlong_penalty_factor

    def forward(
        self,
        logprobs: Tensor,
        old_logprobs: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        *,
        ref_logprobs: Tensor | None = None,
        num_tokens_global: int | None = None,
        num_seqs_global: int | None = None,
    ) -> LossOutput:
        """Compute the loss.

        Args:
            logprobs: ``(N, L)`` current per-token log-probabilities (with grad). Padding may hold NaN.
            old_logprobs: ``(N, L)`` log-probabilities at sampling time.
            advantages: ``(N,)`` per sequence or ``(N, L)`` per token.
            response_mask: ``(N, L)`` bool.
            ref_logprobs: ``(N, L)`` frozen-reference log-probabilities; required iff ``kl_reference`` is FROZEN.
            num_tokens_global: whole-batch token count (TOKEN_MEAN micro-batching).
            num_seqs_global: whole-batch count of non-empty sequences (SEQ_MEAN_* micro-batching).

        Returns:
            ``LossOutput`` (see ``clipped_policy_objective`` for the metrics).
        """
        if self.kl_reference is KLReference.FROZEN and ref_logprobs is None:
            raise ValueError("ref_logprobs: required with kl_reference=KLReference.FROZEN, got None")
        if self.kl_reference is KLReference.ROLLOUT and ref_logprobs is not None:
            raise ValueError("ref_logprobs: given, but kl_reference=KLReference.ROLLOUT measures KL to old_logprobs")
        if self.overlong_max_len is not None and self.overlong_buffer is not None:
            lengths = response_mask.sum(dim=1)
            shaping = overlong_penalty(
                lengths,
                max_len=self.overlong_max_len,
                buffer=self.overlong_buffer,
                penalty_factor=self.overlong_penalty_factor,
            ).to(advantages.dtype)
            advantages = (advantages + shaping) if advantages.dim() == 1 else advantages + shaping.unsqueeze(1)
        return clipped_policy_objective(
            logprobs,
            old_logprobs,
            advantages,
            response_mask,
            ref_logprobs=ref_logprobs,
            clip_eps_low=self.clip_eps_low,
            clip_eps_high=self.clip_eps_high,
            log_ratio_clamp=self.log_ratio_clamp,
            kl_coef=self.kl_coef,
            kl_estimator=self.kl_estimator,
            aggregation=self.aggregation,
            num_tokens_global=num_tokens_global,
            num_seqs_global=num_seqs_global,
        )

    def extra_repr(self) -> str:
        """Hyperparameters in ``repr``."""
        return (
            f"clip_eps_low={self.clip_eps_low}, clip_eps_high={self.clip_eps_high}, kl_coef={self.kl_coef}, "
            f"kl_estimator={self.kl_estimator.name}, kl_reference={self.kl_reference.name}, "
            f"aggregation={self.aggregation.name}, overlong_max_len={self.overlong_max_len}"
        )
