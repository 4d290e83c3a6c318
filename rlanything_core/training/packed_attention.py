"""Attention over packed rows without a dense mask: variable-length kernels fed with ``cu_seq_lens`` from the host.

A packed micro-batch is one sequence of ``T = sum(lengths)`` tokens. Given a dense ``(1, 1, T, T)`` block-causal mask,
SDPA refuses its flash backend, repeats grouped-query K/V per head group and computes every ``T x T`` tile; the mask
itself grows with the square of the micro-batch (64 MiB at 8k tokens). A variable-length kernel instead takes the
sequences' boundaries (``cu_seq_lens``, int32 offsets ``[0, l0, l0 + l1, ...]``) and the longest length, and computes
``sum(len * (len + 1) / 2)`` causal pairs. Both are known on the host when the rows are packed, so no kernel launch
waits on a device read.

Backends, in the order ``select_backend`` tries them (once per device type, named in the log):

- ``flash_attention_3`` / ``flash_attention_2``: the ``flash_attn_interface`` / ``flash_attn`` packages'
  ``flash_attn_varlen_func`` (CUDA, when installed);
- ``varlen``: ``torch.nn.attention.varlen.varlen_attn`` (CUDA; torch's own flash kernel, no compilation);
- ``flex_attention``: ``torch.nn.attention.flex_attention`` with a document block mask (compiled on CUDA; it computes
  only the blocks the mask touches; its backward does not run on CPUs);
- ``segments``: causal SDPA on each sequence's slice of the row, one call per sequence (any device; the CPU default).
  It computes the same pairs as a varlen kernel, in the model's dtype; the price is a kernel launch per sequence,
  which a CPU does not notice and a GPU would (there the kernels above come first);
- ``dense``: the block-causal mask under the model's own attention (``packing.block_causal_mask``): every ``T x T``
  pair, kept as the reference the others are tested against.

The kernels are reached through transformers' ``AttentionInterface``: the model's attention implementation is
replaced by a registered wrapper (``rlanything_packed_<base>``) that behaves exactly as its base (``sdpa``, ...) unless
the call carries a ``PackedAttention`` keyword, which only the packed forward passes. The dispatch is made from the
call's own arguments, so an activation-checkpointing recompute in the backward runs the same kernel.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "BACKENDS",
    "PACKED_KEYWORD",
    "PackedAttention",
    "attention_pairs",
    "document_block_mask",
    "install_packed_attention",
    "mask_argument",
    "packed_attention",
    "run_packed",
    "select_backend",
]

log = logging.getLogger(__name__)

BACKENDS = ("flash_attention_3", "flash_attention_2", "varlen", "flex_attention", "segments", "dense")
PACKED_KEYWORD = "rlanything_packed"
"""The keyword the packed forward passes down to the attention layers (transformers forwards unknown kwargs)."""
_ENV = "RLANYTHING_PACKED_ATTENTION"
_CHOSEN: dict[str, str] = {}
_COMPILED_FLEX: list[Any] = []
_PREFIX = "rlanything_packed_"


@dataclass(frozen=True)
class PackedAttention:
    """What a variable-length kernel needs about one packed sequence, built once per forward (not per layer).

    Attributes:
        backend: one of ``BACKENDS`` except ``dense``.
        cu_seq_lens: ``(N + 1,)`` int32 on the device, the sequences' offsets in the packed row.
        max_len: the longest sequence (a host int: the kernels size their grids with it).
        lengths: the sequences' lengths (host), for accounting.
        block_mask: the document ``BlockMask`` (``flex_attention`` only).
    """

    backend: str
    cu_seq_lens: Tensor
    max_len: int
    lengths: tuple[int, ...]
    block_mask: Any = None


def _available(backend: str, device: torch.device) -> bool:
    if backend in ("segments", "dense"):
        return True
    if backend == "flex_attention":
        return importlib.util.find_spec("torch.nn.attention.flex_attention") is not None and device.type == "cuda"
    if device.type != "cuda":
        return False
    if backend == "varlen":
        return importlib.util.find_spec("torch.nn.attention.varlen") is not None
    package = "flash_attn_interface" if backend == "flash_attention_3" else "flash_attn"
    if importlib.util.find_spec(package) is None:
        return False
    try:  # installed is not enough: a build for another torch fails to import (then the next backend runs)
        importlib.import_module(package)
    except Exception as exc:  # noqa: BLE001 - any import failure means the kernel cannot run here
        log.warning("packed attention: %s is installed but does not import (%s); trying the next backend", package, exc)
        return False
    return True


def select_backend(device: torch.device | str, requested: str | None = None) -> str:
    """The packed-attention backend for ``device``: the first of ``BACKENDS`` available there, chosen once.

    Args:
        device: where the model runs.
        requested: a backend to use instead (also ``RLANYTHING_PACKED_ATTENTION``); it is not checked for
            availability beyond its name (tests run ``flex_attention`` forwards and ``varlen`` on ``meta`` on a CPU).

    Raises:
        ValueError: ``requested`` is not one of ``BACKENDS``.
    """
    device = torch.device(device)
    requested = requested or os.environ.get(_ENV) or None
    if requested is not None:
        if requested not in BACKENDS:
            raise ValueError(f"attention: expected one of {BACKENDS}, got {requested!r}")
        return requested
    if device.type not in _CHOSEN:
        choice = next(b for b in BACKENDS if _available(b, device))
        _CHOSEN[device.type] = choice
        log.info("packed attention on %s: %s", device.type, choice)
    return _CHOSEN[device.type]


def document_block_mask(segments: Tensor, *, block_size: int = 128) -> Any:
    """The flex-attention ``BlockMask`` of per-sequence causal attention over a packed row (``segments``: (1, T))."""
    from torch.nn.attention.flex_attention import create_block_mask

    seg = segments[0]

    def same_document_causal(b: Tensor, h: Tensor, q: Tensor, k: Tensor) -> Tensor:
        return (seg[q] == seg[k]) & (k <= q)

    t = seg.shape[0]
    return create_block_mask(
        same_document_causal, None, None, t, t, device=str(seg.device), BLOCK_SIZE=block_size, _compile=False
    )


def packed_attention(segments: Tensor, lengths: list[int], backend: str, *, block_size: int = 128) -> PackedAttention:
    """The ``PackedAttention`` of a packed row whose sequences have ``lengths`` (host) in order.

    Raises:
        ValueError: ``backend`` is ``dense`` or unknown, or ``lengths`` do not add up to the row.
    """
    if backend not in BACKENDS or backend == "dense":
        raise ValueError(f"backend: expected one of {BACKENDS[:-1]}, got {backend!r}")
    kept = [n for n in lengths if n > 0]
    if sum(kept) != segments.shape[-1]:
        raise ValueError(f"lengths: expected them to add up to the packed row's {segments.shape[-1]}, got {sum(kept)}")
    offsets = torch.zeros(len(kept) + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(torch.tensor(kept, dtype=torch.int32), 0)
    # pinned and non-blocking: the copy overlaps the embedding lookup instead of stalling the host
    if segments.device.type == "cuda":
        offsets = offsets.pin_memory()
    cu = offsets.to(segments.device, non_blocking=True)
    block_mask = document_block_mask(segments, block_size=block_size) if backend == "flex_attention" else None
    return PackedAttention(backend, cu, max(kept, default=0), tuple(kept), block_mask)


def mask_argument(packed: PackedAttention, device: torch.device) -> Any:
    """What the packed forward passes as ``attention_mask``: the block mask (flex) or an empty ``(1, 1, 0, 0)`` marker.

    A 4-D mask is returned as-is by transformers' mask creation (``masking_utils``), which otherwise, given none,
    reads the ``position_ids`` back from the device to find the restarts and builds the dense mask this path avoids.
    The marker carries no data; the wrapper reads the ``PackedAttention`` keyword instead.
    """
    if packed.block_mask is not None:
        return packed.block_mask
    return torch.empty((1, 1, 0, 0), dtype=torch.bool, device=device)


def attention_pairs(packed: PackedAttention) -> int:
    """Query-key pairs the backend computes: ``sum(len * (len + 1) / 2)``, or the block mask's blocks for flex."""
    if packed.block_mask is not None:
        q_block, kv_block = packed.block_mask.BLOCK_SIZE
        blocks = packed.block_mask.kv_num_blocks.sum()
        if packed.block_mask.full_kv_num_blocks is not None:
            blocks = blocks + packed.block_mask.full_kv_num_blocks.sum()
        return int(blocks) * q_block * kv_block
    return sum(n * (n + 1) // 2 for n in packed.lengths)


# ------------------------------------------------------------------------------------------------ the kernels
def _varlen_kernel(backend: str) -> Callable[..., Any]:
    """``(q, k, v, cu, max_len, scale, window) -> out`` on ``(T, H, D)`` tensors, for the flash-type backends."""
    if backend == "varlen":
        from torch.nn.attention import varlen

        def run_torch(q: Tensor, k: Tensor, v: Tensor, cu: Tensor, m: int, scale: float | None, window: int) -> Any:
            return varlen.varlen_attn(
                q, k, v, cu, cu, m, m, scale=scale, window_size=(window, 0), enable_gqa=k.shape[1] != q.shape[1]
            )

        return run_torch
    module = importlib.import_module("flash_attn_interface" if backend == "flash_attention_3" else "flash_attn")

    def run_flash(q: Tensor, k: Tensor, v: Tensor, cu: Tensor, m: int, scale: float | None, window: int) -> Any:
        out = module.flash_attn_varlen_func(
            q, k, v, cu, cu, m, m, softmax_scale=scale, causal=True, window_size=(window, 0)
        )
        return out[0] if isinstance(out, tuple) else out  # flash-attn 3 also returns the log-sum-exp

    return run_flash


def _flex(query: Tensor, key: Tensor, value: Tensor, block_mask: Any, scale: float | None) -> Tensor:
    from torch.nn.attention.flex_attention import flex_attention

    fn: Any = flex_attention
    if query.device.type == "cuda":  # eager flex materializes the scores; compiled it is a fused block-sparse kernel
        if not _COMPILED_FLEX:
            _COMPILED_FLEX.append(torch.compile(flex_attention, dynamic=True))
        fn = _COMPILED_FLEX[0]
    gqa = key.shape[1] != query.shape[1]
    return fn(query, key, value, block_mask=block_mask, scale=scale, enable_gqa=gqa)


def _segments(
    packed: PackedAttention, query: Tensor, key: Tensor, value: Tensor, scale: float | None, window: int | None
) -> Tensor:
    """Causal SDPA per sequence of the row: ``(1, H, T, D)`` in and out, ``sum(len^2)`` work instead of ``T^2``."""
    gqa = key.shape[1] != query.shape[1]
    outs, start = [], 0
    for n in packed.lengths:
        q, k, v = (x[:, :, start : start + n] for x in (query, key, value))
        start += n
        band = None  # a window shorter than the sequence: key k is seen by query p when p - window < k <= p
        if window is not None and window < n:
            pos = torch.arange(n, device=q.device)
            band = (pos[None, :] <= pos[:, None]) & (pos[None, :] > pos[:, None] - window)
        outs.append(torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=band, is_causal=band is None, scale=scale, enable_gqa=gqa))  # fmt: skip
    return torch.cat(outs, dim=2) if outs else query


def run_packed(
    packed: PackedAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    scaling: float | None,
    sliding_window: int | None,
) -> Tensor:
    """Attention of ``(1, H, T, D)`` query/key/value per ``packed``; ``(1, T, H, D)`` out, as transformers expects."""
    if packed.backend == "segments":
        return _segments(packed, query, key, value, scaling, sliding_window).transpose(1, 2)
    if packed.backend == "flex_attention":
        if sliding_window is not None:
            raise ValueError("sliding_window: the packed flex_attention path has no sliding window; use a varlen one")
        return _flex(query, key, value, packed.block_mask, scaling).transpose(1, 2)
    q, k, v = (x[0].transpose(0, 1) for x in (query, key, value))  # (T, H, D)
    dtype = q.dtype
    if dtype not in (torch.float16, torch.bfloat16):  # the flash kernels run in half precision only
        q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    window = -1 if sliding_window is None else sliding_window - 1
    out = _varlen_kernel(packed.backend)(q, k, v, packed.cu_seq_lens, packed.max_len, scaling, window)
    return out.to(dtype).unsqueeze(0)


def _wrapper(base: str) -> Callable[..., tuple[Tensor, None]]:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    def attention(
        module: Any,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attention_mask: Tensor | None,
        dropout: float = 0.0,
        scaling: float | None = None,
        sliding_window: int | None = None,
        **kwargs: Any,
    ) -> Any:
        packed = kwargs.pop(PACKED_KEYWORD, None)
        if packed is None:  # not a packed forward: the base implementation, unchanged
            if base == "eager":  # each modeling file has its own eager function: the module's
                fn: Any = sys.modules[type(module).__module__].eager_attention_forward
            else:
                fn = ALL_ATTENTION_FUNCTIONS.get(base, sdpa_attention_forward)
            return fn(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                      sliding_window=sliding_window, **kwargs)  # fmt: skip
        if dropout:
            raise ValueError("dropout: the packed attention path runs without attention dropout")
        return run_packed(packed, query, key, value, scaling=scaling, sliding_window=sliding_window), None

    return attention


def install_packed_attention(model: Any) -> str:
    """Make ``model``'s attention a wrapper of its own that also runs packed kernels; returns its name (idempotent).

    The wrapper (registered with transformers' ``AttentionInterface`` and ``AttentionMaskInterface`` as
    ``rlanything_packed_<base>``) behaves as ``<base>`` unless a ``PackedAttention`` is passed with the call.
    """
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
    from transformers.modeling_utils import AttentionInterface

    base = getattr(model.config, "_attn_implementation", None) or "eager"
    if base.startswith(_PREFIX):
        return str(base)
    name = _PREFIX + base
    AttentionInterface.register(name, _wrapper(base))
    if base in ALL_MASK_ATTENTION_FUNCTIONS:
        AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS[base])
    model.set_attn_implementation(name)
    return name
