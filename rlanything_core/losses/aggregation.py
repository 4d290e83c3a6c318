"""How per-token losses ``(N, L)`` are reduced to the scalar that is backpropagated.

Every mode is written as ``sum over tokens of w_t * value_t`` divided by a denominator that can be given *globally*
(``num_tokens_global`` / ``num_seqs_global``), so that a batch split into micro-batches with gradient accumulation gives
exactly the full-batch loss: ``sum_k loss(micro_k) == loss(full batch)`` (and the same gradients). Do **not** divide
the micro-batch losses by the number of accumulation steps on top of this.
"""

from __future__ import annotations

from enum import Enum

from torch import Tensor

from rlanything_core.masking import masked_mean, masked_sum

__all__ = ["Aggregation", "aggregate", "count_normalizer"]


class Aggregation(Enum):
    """Reduction of per-token values to one scalar.

    Attributes:
        TOKEN_MEAN: ``sum_{i,t} x_{i,t} / (#response tokens of the whole batch)``: every token weighs the same (DAPO).
        SEQ_MEAN_TOKEN_MEAN: ``(1/#seqs) sum_i (1/|y_i|) sum_t x_{i,t}``: every sample weighs the same whatever its
            length (the authors' code, Open-AgentRL train/alfworld_train.py).
        SEQ_MEAN_TOKEN_SUM: ``(1/#seqs) sum_i sum_t x_{i,t}``: longer responses weigh more (Dr. GRPO-like).
    """

    TOKEN_MEAN = "token_mean"
    SEQ_MEAN_TOKEN_MEAN = "seq_mean_token_mean"
    SEQ_MEAN_TOKEN_SUM = "seq_mean_token_sum"


def count_normalizer(mask: Tensor, mode: Aggregation) -> int:
    """The denominator ``aggregate`` uses by default for ``mask``: tokens (TOKEN_MEAN) or non-empty sequences.

    Sum it over all micro-batches of a batch to get ``num_tokens_global`` / ``num_seqs_global``.

    Args:
        mask: ``(N, L)`` bool response mask.
        mode: the aggregation mode.

    Examples:
        >>> import torch
        >>> m = torch.tensor([[True, True, False], [False, False, False]])
        >>> count_normalizer(m, Aggregation.TOKEN_MEAN), count_normalizer(m, Aggregation.SEQ_MEAN_TOKEN_MEAN)
        (2, 1)
    """
    if mode is Aggregation.TOKEN_MEAN:
        return int(mask.sum())
    return int(mask.any(dim=1).sum())


def aggregate(
    values: Tensor,
    mask: Tensor,
    mode: Aggregation,
    *,
    num_tokens_global: int | None = None,
    num_seqs_global: int | None = None,
) -> Tensor:
    """Reduce per-token ``values`` to a scalar; padding (even NaN) never contributes, an empty batch gives 0.

    Args:
        values: ``(N, L)`` float per-token values.
        mask: ``(N, L)`` bool, ``True`` on the tokens that count.
        mode: an ``Aggregation``.
        num_tokens_global: TOKEN_MEAN denominator: number of masked tokens in the *whole* batch (all micro-batches,
            all ranks). Default: this call's count.
        num_seqs_global: SEQ_MEAN_* denominator: number of sequences with at least one masked token in the whole
            batch. Default: this call's count. Sequences without any masked token contribute 0 to the numerator.

    Returns:
        Scalar tensor (keeps the autograd graph of ``values`` even when everything is masked).

    Examples:
        >>> import torch
        >>> v = torch.tensor([[1.0, 3.0, float("nan")], [5.0, float("nan"), float("nan")]])
        >>> m = torch.tensor([[True, True, False], [True, False, False]])
        >>> aggregate(v, m, Aggregation.TOKEN_MEAN), aggregate(v, m, Aggregation.SEQ_MEAN_TOKEN_MEAN)
        (tensor(3.), tensor(3.5000))
    """
    if not isinstance(mode, Aggregation):
        raise ValueError(f"mode: expected an Aggregation, got {mode!r}")
    if mode is Aggregation.TOKEN_MEAN:
        denom = _global_count("num_tokens_global", num_tokens_global, mask, mode)
        return masked_sum(values, mask) / max(denom, 1)
    denom = _global_count("num_seqs_global", num_seqs_global, mask, mode)
    if mode is Aggregation.SEQ_MEAN_TOKEN_MEAN:
        per_seq = masked_mean(values, mask, dim=1)
    else:
        per_seq = masked_sum(values, mask, dim=1)
    return per_seq.sum() / max(denom, 1)


def _global_count(name: str, given: int | None, mask: Tensor, mode: Aggregation) -> int:
    if given is None:
        return count_normalizer(mask, mode)
    if isinstance(given, bool) or not isinstance(given, int):
        raise ValueError(f"{name}: expected an int or None, got {given!r}")
    if mask.is_meta:  # a mask without data (a model on ``meta``) has no count to check against
        return given
    local = count_normalizer(mask, mode)
    if given < local:
        raise ValueError(f"{name}: expected the whole batch's count (>= this micro-batch's {local}), got {given}")
    return given
