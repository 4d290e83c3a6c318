"""Per-token log-probabilities of right-padded rows under a causal language model."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["sequence_token_logprobs"]


def sequence_token_logprobs(model: Any, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    """Log-prob of every token given the tokens before it, aligned with the token (position ``t`` scores token ``t``).

    Args:
        model: a causal LM returning ``.logits`` of shape ``(N, L, V)`` (any ``transformers`` ``*ForCausalLM``).
        input_ids: ``(N, L)`` int64, right-padded.
        attention_mask: ``(N, L)`` bool.

    Returns:
        ``(N, L)`` float32; position 0 (no context) and padding hold 0.
    """
    if input_ids.shape != attention_mask.shape:
        raise ValueError(
            f"attention_mask: expected shape {tuple(input_ids.shape)} like input_ids, got {tuple(attention_mask.shape)}"
        )
    # Right padding: positions are 0..len-1 for every row, which is what the model assumes without position_ids.
    logits = model(input_ids=input_ids, attention_mask=attention_mask.long()).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    out[:, 1:] = torch.where(attention_mask[:, 1:], picked, torch.zeros_like(picked))
    return out
