"""Per-token log-probabilities of right-padded rows under a causal language model."""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor

__all__ = ["RowScorer", "sequence_token_logprobs"]


@runtime_checkable
class RowScorer(Protocol):
    """A model that scores candidate rows instead of modelling tokens: a declared capability, not a probe.

    An encoder scorer policy or judge (``models.encoder_rows.EncoderRowModel``) is one; the update, the packing and the
    backends ask for this type.
    """

    def row_logprobs(self, input_ids: Tensor, attention_mask: Tensor, score_mask: Tensor) -> Tensor:
        """``(N, L)`` log-probabilities of the scored positions of rows laid out by ``models.scorer_rows``."""
        ...


def _is_fsdp_unit(model: Any) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch without distributed support
        return False
    return isinstance(model, FSDPModule)


def _split_head(model: Any) -> tuple[Any, Any] | None:
    """``(decoder, lm_head)`` of a transformers causal LM, or ``None`` when the model does not expose them."""
    get_decoder = getattr(model, "get_decoder", None)
    get_head = getattr(model, "get_output_embeddings", None)
    if get_decoder is None or get_head is None:
        return None
    if _is_fsdp_unit(model):  # its root unit gathers the head and embeddings only in its own forward
        return None
    decoder, head = get_decoder(), get_head()
    if decoder is None or head is None or getattr(model.config, "final_logit_softcapping", None):
        return None
    return decoder, head


def sequence_token_logprobs(
    model: Any, input_ids: Tensor, attention_mask: Tensor, *, score_mask: Tensor | None = None
) -> Tensor:
    """Log-prob of every token given the tokens before it, aligned with the token (position ``t`` scores token ``t``).

    With ``score_mask`` only those tokens are scored: the LM head (vocabulary-sized, the dominant cost of a small
    model with a large vocabulary) runs on just the positions that predict them, not on every prompt position.

    Args:
        model: a causal LM returning ``.logits`` (any ``transformers`` ``*ForCausalLM``).
        input_ids: ``(N, L)`` int64, right-padded.
        attention_mask: ``(N, L)`` bool.
        score_mask: ``(N, L)`` bool, the tokens to score (e.g. the response tokens); default all but padding.

    Returns:
        ``(N, L)`` float32; unscored positions, position 0 (no context) and padding hold 0.

    A model that is not a language model but scores candidates (a :class:`RowScorer`: an encoder scorer policy or
    judge, ``rlanything_core.models.scorer``) provides ``row_logprobs(input_ids, attention_mask, score_mask)`` over
    rows laid out by ``models.scorer_rows``; it is used instead, so the trainer needs no other code path.
    """
    if input_ids.shape != attention_mask.shape:
        raise ValueError(
            f"attention_mask: expected shape {tuple(input_ids.shape)} like input_ids, got {tuple(attention_mask.shape)}"
        )
    if score_mask is not None and score_mask.shape != input_ids.shape:
        raise ValueError(f"score_mask: expected shape {tuple(input_ids.shape)}, got {tuple(score_mask.shape)}")
    device = input_ids.device
    if isinstance(model, RowScorer):
        attention_mask, score_mask = attention_mask.to(device), None if score_mask is None else score_mask.to(device)
        scored = attention_mask if score_mask is None else score_mask & attention_mask
        return model.row_logprobs(input_ids, attention_mask, scored)
    # The scored positions are chosen on the host (masks may arrive there or on the device): indexing by them then
    # needs no device synchronization, and a model on a device without data (``meta``) runs the same path.
    host_attention = attention_mask.cpu()
    wanted = host_attention[:, 1:] if score_mask is None else (score_mask.cpu() & host_attention)[:, 1:]
    model_mask = attention_mask.to(device).long()
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=device)
    parts = _split_head(model)
    if parts is None or score_mask is None:
        # Right padding: positions are 0..len-1 for every row, which is what the model assumes without position_ids.
        # Only the positions from the first scored one on need logits (``logits_to_keep`` keeps the last k).
        scored = wanted.any(dim=0).nonzero()
        first = int(scored[0]) if score_mask is not None and scored.numel() else 0
        keeps = "logits_to_keep" in inspect.signature(model.forward).parameters
        kwargs = {"logits_to_keep": input_ids.shape[1] - first} if first and keeps else {}
        first = first if kwargs else 0
        logits = model(input_ids=input_ids, attention_mask=model_mask, **kwargs).logits
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        picked = logp.gather(-1, input_ids[:, first + 1 :].unsqueeze(-1)).squeeze(-1)
        part = wanted[:, first:].to(device)
        out[:, first + 1 :] = torch.where(part, picked, torch.zeros_like(picked))
        return out
    decoder, head = parts
    hidden = decoder(input_ids=input_ids, attention_mask=model_mask).last_hidden_state  # (N, L, H)
    # token (rows, cols + 1) is predicted at (rows, cols)
    rows, cols = (i.to(device) for i in wanted.nonzero(as_tuple=True))
    logits = head(hidden[rows, cols])  # (K, V)
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, input_ids[rows, cols + 1].unsqueeze(-1)).squeeze(-1)
    out = out.index_put((rows, cols + 1), logp)
    return out
