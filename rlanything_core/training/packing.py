"""Sequence packing: right-padded rows as one row of concatenated sequences, log-probs only where they are scored.

A padded micro-batch computes ``rows * longest`` positions and carries a padding mask, which keeps attention off the
flash kernels (and repeats grouped-query K/V); its LM head and log-softmax run over the whole vocabulary at every
position. Packed, the same rows are one row of ``sum(lengths)`` tokens whose ``position_ids`` restart at 0 for each
sequence. Attention stays within each sequence without a dense mask where a variable-length kernel runs
(``training/packed_attention.py``: flash attention, torch's ``varlen_attn`` or flex attention, fed the sequences'
offsets from the host; on a CPU, causal SDPA per sequence); the dense block-causal mask (``block_causal_mask``) is
the reference they are tested against. The head then
runs only on the positions that predict a scored (response) token, a chunk of positions at a time, each chunk
recomputed in the backward instead of keeping its ``(chunk, vocabulary)`` logits.

Under FSDP2 the root unit gathers the embeddings, final norm and head only inside its own forward; the packed scoring
is therefore installed on each model as an FSDP forward method (``torch.distributed.fsdp.register_fsdp_forward_method``,
a public API), so that the same code runs sharded and unsharded.

Equivalence with the padded path (log-probs and gradients): ``tests/training/test_packing.py``.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from rlanything_core.training.logprobs import RowScorer, _is_fsdp_unit
from rlanything_core.training.packed_attention import (
    PACKED_KEYWORD,
    PackedAttention,
    install_packed_attention,
    mask_argument,
    packed_attention,
    select_backend,
)

__all__ = ["PackedRows", "block_causal_mask", "head_logprobs", "pack_rows", "packable", "packed_token_logprobs"]

# positions per chunk of the vocabulary head: 1024 x 152k logits are 0.6 GB in fp32, freed after each chunk
DEFAULT_CHUNK_TOKENS = 1024
_METHOD = "rlanything_packed_scores"


@dataclass(frozen=True)
class PackedRows:
    """Rows concatenated into one sequence, and where the scored tokens sit in it.

    Attributes:
        input_ids: ``(1, T)`` int64, the rows' real tokens back to back (``T = sum(lengths)``), on the ids' device.
        position_ids: ``(1, T)`` int64, each row's positions ``0..len-1`` (a restart marks a new sequence).
        segments: ``(1, T)`` int64, the row each packed token comes from (numbered from the host's lengths).
        predict: ``(K,)`` int64, the packed positions whose output predicts a scored token (its position minus one).
        rows: ``(K,)`` int64, the row of each scored token in the padded ``(N, L)`` grid (host).
        cols: ``(K,)`` int64, its column (host).
        targets: ``(K,)`` int64, the scored tokens' ids, on the ids' device.
        lengths: the packed sequences' lengths in order (host ints; zero-length rows left out).
    """

    input_ids: Tensor
    position_ids: Tensor
    segments: Tensor
    predict: Tensor
    rows: Tensor
    cols: Tensor
    targets: Tensor
    lengths: tuple[int, ...] = ()


def pack_rows(input_ids: Tensor, attention_mask: Tensor, score_mask: Tensor | None = None) -> PackedRows:
    """Pack right-padded rows into one sequence; positions are chosen from the masks on the host.

    Args:
        input_ids: ``(N, L)`` int64, right-padded (any device: only indexed).
        attention_mask: ``(N, L)`` bool, a prefix of each row (right padding).
        score_mask: ``(N, L)`` bool, the tokens to score; default every real token but each row's first.

    Returns:
        The ``PackedRows`` (a token at column 0 has no context and is never scored).

    Raises:
        ValueError: a mask's shape differs from ``input_ids``', or a row is not right-padded.

    Examples:
        >>> ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
        >>> p = pack_rows(ids, torch.tensor([[1, 1, 1], [1, 1, 0]]).bool())
        >>> p.input_ids.tolist(), p.position_ids.tolist(), p.predict.tolist()
        ([[5, 6, 7, 8, 9]], [[0, 1, 2, 0, 1]], [0, 1, 3])
    """
    if input_ids.dim() != 2 or attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"attention_mask: expected shape {tuple(input_ids.shape)} like a 2-D input_ids, "
            f"got {tuple(attention_mask.shape)}"
        )
    if score_mask is not None and score_mask.shape != input_ids.shape:
        raise ValueError(f"score_mask: expected shape {tuple(input_ids.shape)}, got {tuple(score_mask.shape)}")
    attention = attention_mask.cpu().bool()
    lengths = attention.sum(dim=1)
    positions = torch.arange(attention.shape[1])
    if not bool((attention == (positions < lengths[:, None])).all()):
        raise ValueError("attention_mask: expected right-padded rows (each row's real tokens first, then padding)")
    scored = attention if score_mask is None else score_mask.cpu().bool() & attention
    scored = scored & (positions >= 1)  # the first token of a row has no context
    offsets = torch.cumsum(lengths, 0) - lengths  # where each row starts in the packed sequence
    real_rows, real_cols = attention.nonzero(as_tuple=True)
    rows, cols = scored.nonzero(as_tuple=True)
    device = input_ids.device
    return PackedRows(
        input_ids=input_ids[real_rows.to(device), real_cols.to(device)].unsqueeze(0),
        position_ids=real_cols.unsqueeze(0).to(device),
        segments=real_rows.unsqueeze(0).to(device),
        predict=(offsets[rows] + cols - 1).to(device),
        rows=rows,
        cols=cols,
        targets=input_ids[rows.to(device), cols.to(device)],
        lengths=tuple(int(n) for n in lengths.tolist() if n > 0),
    )


def _chunk_logprobs(head: Any, hidden: Tensor, targets: Tensor) -> Tensor:
    logits = head(hidden).float()
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def head_logprobs(head: Any, hidden: Tensor, targets: Tensor, *, chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> Tensor:
    """``log_softmax(head(hidden))[targets]`` a chunk of positions at a time.

    With gradients enabled each chunk is recomputed in the backward (``torch.utils.checkpoint``), so at most one
    chunk's ``(chunk, vocabulary)`` fp32 logits exist at a time, in the forward and in the backward.

    Args:
        head: the LM head (``(…, H) -> (…, V)``).
        hidden: ``(K, H)`` the hidden states that predict the targets.
        targets: ``(K,)`` int64 token ids.
        chunk_tokens: positions per chunk (``>= 1``).

    Returns:
        ``(K,)`` float32 log-probs.
    """
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens: expected >= 1, got {chunk_tokens}")
    if hidden.shape[0] != targets.shape[0]:
        raise ValueError(f"targets: expected {hidden.shape[0]} ids, one per hidden state, got {targets.shape[0]}")
    parts = []
    for start in range(0, hidden.shape[0], chunk_tokens):
        h, t = hidden[start : start + chunk_tokens], targets[start : start + chunk_tokens]
        if torch.is_grad_enabled() and h.requires_grad:
            parts.append(checkpoint(_chunk_logprobs, head, h, t, use_reentrant=False))
        else:
            parts.append(_chunk_logprobs(head, h, t))
    return torch.cat(parts) if parts else hidden.new_zeros(0, dtype=torch.float32)


def packable(model: Any) -> bool:
    """Whether ``model`` is a transformers causal LM whose decoder and head packing can drive.

    Not packable: candidate scorers (``RowScorer``), models without ``get_decoder``/``get_output_embeddings``, and
    models whose logits are transformed after the head (``final_logit_softcapping``: Gemma 2).
    """
    if isinstance(model, RowScorer):
        return False
    if not callable(getattr(model, "get_decoder", None)) or not callable(getattr(model, "get_output_embeddings", None)):
        return False
    config = getattr(model, "config", None)
    if config is None or getattr(config, "final_logit_softcapping", None):
        return False
    return model.get_decoder() is not None and model.get_output_embeddings() is not None


def block_causal_mask(segments: Tensor) -> Tensor:
    """``(1, 1, T, T)`` bool: token ``q`` attends to token ``k`` when both are in the same segment and ``k <= q``.

    Built on ``segments``' device from values known on the host (no device read), as SDPA takes it.
    """
    seg = segments[0]
    causal = torch.ones(seg.shape[0], seg.shape[0], dtype=torch.bool, device=seg.device).tril()
    return (causal & (seg[:, None] == seg[None, :]))[None, None]


def _packed_scores(
    self: Any,
    input_ids: Tensor,
    position_ids: Tensor,
    segments: Tensor,
    predict: Tensor,
    targets: Tensor,
    chunk_tokens: int,
    attention: PackedAttention | None = None,
) -> Tensor:
    """The decoder on the packed row, then the head on the predicting positions (a forward method of the model)."""
    decoder = self.get_decoder()
    kwargs: dict[str, Any] = {}
    if attention is not None:
        # a variable-length kernel: no (T, T) mask; the wrapper installed on the model reads the keyword
        mask: Any = mask_argument(attention, input_ids.device)
        kwargs[PACKED_KEYWORD] = attention
    else:
        # The reference path (``attention='dense'``). Under SDPA and eager attention the block-diagonal mask is
        # given, in the form each takes (transformers would build the same one, after reading the position_ids back
        # from the device to find the restarts); flash attention and the others take the restarting position_ids
        # alone. No cache: transformers reads restarts as packing only without one.
        implementation = str(getattr(self.config, "_attn_implementation", None)).removeprefix("rlanything_packed_")
        mask = None
        if implementation in ("sdpa", "eager"):
            mask = block_causal_mask(segments)
            if implementation == "eager":  # an additive mask in the compute dtype, as transformers' eager_mask
                dtype = self.get_input_embeddings().weight.dtype
                mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
                    ~mask, torch.finfo(dtype).min
                )
    hidden = decoder(input_ids=input_ids, position_ids=position_ids, attention_mask=mask, use_cache=False, **kwargs)
    hidden = hidden.last_hidden_state[0]  # (T, H)
    return head_logprobs(self.get_output_embeddings(), hidden[predict], targets, chunk_tokens=chunk_tokens)


def _scorer(model: Any) -> Any:
    """``model``'s packed-scoring method; on an FSDP2 unit registered as a forward method (public API).

    Installed again when the model was sharded after the first install (the registration wraps the method then).
    """
    sharded = _is_fsdp_unit(model)
    if getattr(model, "_rlanything_packed_sharded", None) is not sharded:
        object.__setattr__(model, _METHOD, types.MethodType(_packed_scores, model))
        if sharded:
            from torch.distributed.fsdp import register_fsdp_forward_method

            register_fsdp_forward_method(model, _METHOD)
        object.__setattr__(model, "_rlanything_packed_sharded", sharded)
    return getattr(model, _METHOD)


def packed_token_logprobs(
    model: Any,
    input_ids: Tensor,
    attention_mask: Tensor,
    *,
    score_mask: Tensor | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    attention: str | None = None,
    block_size: int = 128,
) -> Tensor:
    """What ``training.logprobs.sequence_token_logprobs`` returns, computed on the rows packed into one sequence.

    Args:
        model: a packable causal LM (``packable``), plain or an FSDP2 unit.
        input_ids: ``(N, L)`` int64, right-padded, on the model's device.
        attention_mask: ``(N, L)`` bool (host or device).
        score_mask: ``(N, L)`` bool, the tokens to score; default every real token but each row's first.
        chunk_tokens: positions per chunk of the vocabulary head.
        attention: the attention backend (``packed_attention.BACKENDS``); default ``select_backend``'s choice for
            the ids' device (a variable-length kernel on a GPU, causal SDPA per sequence on a CPU).
        block_size: the flex-attention block size (``flex_attention`` only).

    Returns:
        ``(N, L)`` float32 on ``input_ids``' device; unscored positions, column 0 and padding hold 0.
    """
    if not packable(model):
        raise ValueError(f"model: {type(model).__name__} cannot be packed (see packable); use sequence_token_logprobs")
    packed = pack_rows(input_ids, attention_mask, score_mask)
    backend = select_backend(input_ids.device, attention)
    kernel = None
    if backend != "dense" and packed.lengths:
        install_packed_attention(model)
        kernel = packed_attention(packed.segments, list(packed.lengths), backend, block_size=block_size)
    logp = _scorer(model)(
        packed.input_ids, packed.position_ids, packed.segments, packed.predict, packed.targets, chunk_tokens, kernel
    )
    device = input_ids.device
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=device)
    return out.index_put((packed.rows.to(device), packed.cols.to(device)), logp.to(torch.float32))
