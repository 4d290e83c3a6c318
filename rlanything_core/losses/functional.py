"""Pure tensor maths of the clipped policy-gradient objective (arXiv 2602.02488, Open-AgentRL train/alfworld_train.py).

Per response token ``t`` of sample ``i`` (masks select with ``torch.where``; padding may hold NaN)::

    delta_t = clamp(log pi_theta - log pi_old, -c, c)          rho_t = exp(delta_t)
    l_t     = -min(rho_t A_i, clip(rho_t, 1 - eps_low, 1 + eps_high) A_i)
    kl_t    = KL estimator of pi_theta against a reference (k1, k2 or k3)
    loss    = aggregate(l) + kl_coef * aggregate(kl)

Both the policy (``PolicyLoss``) and the judge (``ConsistencyRewardLoss``) train with ``clipped_policy_objective``.
"""

from __future__ import annotations

from enum import Enum

import torch
from torch import Tensor

from rlanything_core._validation import check_bool, check_finite_where, check_floating, check_shape, check_tensor
from rlanything_core.losses.aggregation import Aggregation, aggregate
from rlanything_core.masking import masked_mean
from rlanything_core.types import LossOutput

__all__ = [
    "KLEstimator",
    "broadcast_advantages",
    "clip_fractions",
    "clipped_policy_objective",
    "clipped_surrogate",
    "kl_penalty",
    "log_ratio",
    "overlong_penalty",
]


class KLEstimator(Enum):
    """Per-token estimators of ``KL(pi_theta || pi_ref)`` from samples of ``pi_theta`` (http://joschu.net/blog/kl-approx.html).

    With ``d = log pi_ref - log pi_theta``: K1 = ``-d`` (unbiased, can be negative), K2 = ``d^2 / 2``,
    K3 = ``exp(d) - 1 - d`` (unbiased, nonnegative; the authors' choice).
    """

    K1 = "k1"
    K2 = "k2"
    K3 = "k3"


def log_ratio(logprobs: Tensor, old_logprobs: Tensor, mask: Tensor, *, log_ratio_clamp: float = 10.0) -> Tensor:
    """``clamp(logprobs - old_logprobs, -c, c)`` on masked tokens, 0 on padding (NaN there never leaks).

    Args:
        logprobs: ``(N, L)`` current log-probabilities (with grad).
        old_logprobs: ``(N, L)`` log-probabilities of the sampling policy (no grad).
        mask: ``(N, L)`` bool.
        log_ratio_clamp: ``c``.

    Returns:
        ``(N, L)`` tensor.
    """
    zero = torch.zeros((), dtype=logprobs.dtype, device=logprobs.device)
    new = torch.where(mask, logprobs, zero)
    old = torch.where(mask, old_logprobs.detach(), zero)
    return (new - old).clamp(-log_ratio_clamp, log_ratio_clamp)


def broadcast_advantages(advantages: Tensor, mask: Tensor) -> Tensor:
    """Per-sequence ``(N,)`` or per-token ``(N, L)`` advantages as detached ``(N, L)``, 0 on padding."""
    adv = advantages.detach()
    if adv.dim() == 1:
        adv = adv.unsqueeze(1).expand_as(mask)
    return torch.where(mask, adv, torch.zeros((), dtype=adv.dtype, device=adv.device))


def clipped_surrogate(
    log_ratio: Tensor, advantages: Tensor, *, clip_eps_low: float = 0.2, clip_eps_high: float = 0.2
) -> Tensor:
    """Per-token PPO loss ``-min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)`` (clip-higher when eps differ).

    The gradient is 0 on a token whose ratio has left ``[1 - eps_low, 1 + eps_high]`` in the direction its advantage
    pushes (``rho > 1 + eps_high`` with ``A > 0``, or ``rho < 1 - eps_low`` with ``A < 0``).

    Args:
        log_ratio: ``(N, L)`` from ``log_ratio``.
        advantages: ``(N, L)`` (detached).
        clip_eps_low: lower clip range.
        clip_eps_high: upper clip range.

    Returns:
        ``(N, L)`` per-token loss.

    Examples:
        >>> import torch
        >>> clipped_surrogate(torch.tensor([[0.5]]).log(), torch.tensor([[-1.0]]))
        tensor([[0.8000]])
    """
    ratio = log_ratio.exp()
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_eps_low, 1.0 + clip_eps_high) * advantages
    return -torch.minimum(unclipped, clipped)


def kl_penalty(
    logprobs: Tensor,
    ref_logprobs: Tensor,
    mask: Tensor,
    *,
    estimator: KLEstimator = KLEstimator.K3,
    log_ratio_clamp: float = 10.0,
) -> Tensor:
    """Per-token KL estimate of ``pi_theta`` against a reference; 0 on padding.

    Args:
        logprobs: ``(N, L)`` current log-probabilities.
        ref_logprobs: ``(N, L)`` reference log-probabilities (rollout policy or frozen model; no grad).
        mask: ``(N, L)`` bool.
        estimator: a ``KLEstimator``.
        log_ratio_clamp: ``d`` is clamped to ``[-c, c]`` before ``exp`` (as the authors do).

    Returns:
        ``(N, L)`` tensor.
    """
    d = -log_ratio(logprobs, ref_logprobs, mask, log_ratio_clamp=log_ratio_clamp)
    if estimator is KLEstimator.K1:
        kl = -d
    elif estimator is KLEstimator.K2:
        kl = 0.5 * d * d
    elif estimator is KLEstimator.K3:
        kl = d.exp() - 1.0 - d
    else:
        raise ValueError(f"estimator: expected a KLEstimator, got {estimator!r}")
    return torch.where(mask, kl, torch.zeros((), dtype=kl.dtype, device=kl.device))


def clip_fractions(
    log_ratio: Tensor, advantages: Tensor, mask: Tensor, *, clip_eps_low: float = 0.2, clip_eps_high: float = 0.2
) -> tuple[Tensor, Tensor]:
    """Fractions of masked tokens where clipping is active (zero gradient), low and high side, detached.

    low: ``rho < 1 - eps_low`` and ``A < 0``; high: ``rho > 1 + eps_high`` and ``A > 0``. An empty mask gives 0.
    """
    ratio = log_ratio.detach().exp()
    low = mask & (ratio < 1.0 - clip_eps_low) & (advantages < 0)
    high = mask & (ratio > 1.0 + clip_eps_high) & (advantages > 0)
    count = mask.sum().clamp(min=1).to(ratio.dtype)  # a tensor: no device synchronization per micro-batch
    return low.sum().to(ratio.dtype) / count, high.sum().to(ratio.dtype) / count


def overlong_penalty(lengths: Tensor, *, max_len: int, buffer: int, penalty_factor: float = 1.0) -> Tensor:
    """DAPO soft overlong punishment (Yu et al., 2025, eq. 13), to add to rewards (or advantages).

    ``0`` if ``len <= max_len - buffer``; ``(max_len - buffer - len) / buffer * penalty_factor`` inside the buffer;
    ``-penalty_factor`` beyond ``max_len``.

    Args:
        lengths: ``(N,)`` response lengths in tokens (int or float).
        max_len: the maximum response length ``L_max``.
        buffer: the soft zone ``L_cache`` (``1 <= buffer <= max_len``).
        penalty_factor: the penalty at and beyond ``max_len``.

    Returns:
        ``(N,)`` float32 penalties in ``[-penalty_factor, 0]``.

    Examples:
        >>> import torch
        >>> overlong_penalty(torch.tensor([10, 15, 20, 30]), max_len=20, buffer=10)
        tensor([ 0.0000, -0.5000, -1.0000, -1.0000])
    """
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len: expected an integer >= 1, got {max_len!r}")
    if isinstance(buffer, bool) or not isinstance(buffer, int) or not 1 <= buffer <= max_len:
        raise ValueError(f"buffer: expected an integer in [1, max_len={max_len}], got {buffer!r}")
    if penalty_factor < 0:
        raise ValueError(f"penalty_factor: expected >= 0, got {penalty_factor}")
    length = lengths.to(torch.float32)
    soft = (max_len - buffer - length) / buffer * penalty_factor
    return soft.clamp(min=-penalty_factor, max=0.0)


def clipped_policy_objective(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    ref_logprobs: Tensor | None = None,
    clip_eps_low: float = 0.2,
    clip_eps_high: float = 0.2,
    log_ratio_clamp: float = 10.0,
    kl_coef: float = 0.01,
    kl_estimator: KLEstimator = KLEstimator.K3,
    aggregation: Aggregation = Aggregation.SEQ_MEAN_TOKEN_MEAN,
    num_tokens_global: int | None = None,
    num_seqs_global: int | None = None,
) -> LossOutput:
    """Clipped surrogate + KL penalty, aggregated; validated at this boundary.

    Args:
        logprobs: ``(N, L)`` float, current per-token log-probabilities (with grad).
        old_logprobs: ``(N, L)`` float, log-probabilities at sampling time.
        advantages: ``(N,)`` or ``(N, L)`` float.
        response_mask: ``(N, L)`` bool, ``True`` on response tokens.
        ref_logprobs: ``(N, L)`` KL reference; ``None`` means ``old_logprobs`` (the authors' choice).
        clip_eps_low: lower clip range ``eps_low``.
        clip_eps_high: upper clip range ``eps_high``.
        log_ratio_clamp: clamp of every log-ratio before ``exp``.
        kl_coef: ``beta``; 0 removes the KL term from the loss (it is still logged).
        kl_estimator: a ``KLEstimator``.
        aggregation: an ``Aggregation``.
        num_tokens_global: see ``aggregate``.
        num_seqs_global: see ``aggregate``.

    Returns:
        ``LossOutput``: loss (scalar; 0 attached to the graph when everything is masked) and detached metrics
        ``policy_loss``, ``kl``, ``kl_loss``, ``clip_frac_low``, ``clip_frac_high``, ``clip_frac``, ``approx_kl``
        (k3 of ``pi_theta`` vs ``pi_old``), ``ratio_mean``, ``num_tokens``, ``num_seqs`` (local counts; means are
        local token means).
    """
    # Stays one function: the objective's formula read top to bottom; over 60 lines for its 13 documented arguments.
    mask = _validate(logprobs, old_logprobs, advantages, response_mask, ref_logprobs)
    if clip_eps_low < 0 or clip_eps_low >= 1:
        raise ValueError(f"clip_eps_low: expected 0 <= clip_eps_low < 1, got {clip_eps_low}")
    if clip_eps_high < 0:
        raise ValueError(f"clip_eps_high: expected >= 0, got {clip_eps_high}")
    if log_ratio_clamp <= 0:
        raise ValueError(f"log_ratio_clamp: expected > 0, got {log_ratio_clamp}")
    adv = broadcast_advantages(advantages.to(logprobs.dtype), mask)
    delta = log_ratio(logprobs, old_logprobs, mask, log_ratio_clamp=log_ratio_clamp)
    per_token = clipped_surrogate(delta, adv, clip_eps_low=clip_eps_low, clip_eps_high=clip_eps_high)
    reference = old_logprobs if ref_logprobs is None else ref_logprobs
    kl_tok = kl_penalty(logprobs, reference, mask, estimator=kl_estimator, log_ratio_clamp=log_ratio_clamp)
    counts = {"num_tokens_global": num_tokens_global, "num_seqs_global": num_seqs_global}
    pg = aggregate(per_token, mask, aggregation, **counts)
    kl = aggregate(kl_tok, mask, aggregation, **counts)
    loss = pg + kl_coef * kl if kl_coef != 0 else pg
    with torch.no_grad():
        low, high = clip_fractions(delta, adv, mask, clip_eps_low=clip_eps_low, clip_eps_high=clip_eps_high)
        d = delta.detach()
        metrics = {
            "policy_loss": pg.detach(),
            "kl": kl.detach(),
            "kl_loss": (kl_coef * kl).detach(),
            "clip_frac_low": low,
            "clip_frac_high": high,
            "clip_frac": low + high,
            "approx_kl": masked_mean((-d).exp() - 1.0 + d, mask),
            "ratio_mean": masked_mean(d.exp(), mask),
            "num_tokens": mask.sum(),
            "num_seqs": mask.any(dim=1).sum(),
        }
    return LossOutput(loss=loss, metrics=metrics)


def _validate(
    logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, response_mask: Tensor, ref_logprobs: Tensor | None
) -> Tensor:
    check_tensor("logprobs", logprobs)
    check_floating("logprobs", logprobs)
    check_shape("logprobs", logprobs, (None, None))
    n, length = logprobs.shape
    check_tensor("response_mask", response_mask)
    check_bool("response_mask", response_mask)
    check_shape("response_mask", response_mask, (n, length))
    for name, value in (("old_logprobs", old_logprobs), ("ref_logprobs", ref_logprobs)):
        if value is None:
            continue
        check_tensor(name, value)
        check_floating(name, value)
        check_shape(name, value, (n, length))
        check_finite_where(name, value, response_mask)
    check_finite_where("logprobs", logprobs, response_mask)
    check_tensor("advantages", advantages)
    check_floating("advantages", advantages)
    if advantages.dim() == 1:
        check_shape("advantages", advantages, (n,))
        check_finite_where("advantages", advantages, response_mask.any(dim=1))
    else:
        check_shape("advantages", advantages, (n, length))
        check_finite_where("advantages", advantages, response_mask)
    return response_mask
