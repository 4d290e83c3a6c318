"""Encoder-scorer policy: a bi-encoder that scores the admissible commands of a text game (CPU scale).

``pi(a_k | s) = softmax_k(scale * cos(f(s), g(a_k)) / temperature)`` where

- ``f`` embeds the state text with all-MiniLM-L6-v2, its bottom layers frozen (outputs cached) and its top layers
  fine-tuned (:class:`~rlanything_core.models.encoder.SplitEncoder`);
- ``g`` embeds a command with the *frozen* encoder (cached: commands repeat across steps and games) followed by a
  trainable linear layer (initialized to the identity, so the untrained scorer is the pretrained similarity);
- ``scale`` is a trainable positive scalar (log-parameterized).

The per-step log-probability of the chosen command is what the RL maths needs. It reaches the trainer through the
loop's token rows (:mod:`~rlanything_core.models.scorer_rows`): :meth:`EncoderScorerPolicy.row_logprobs` is the
row-scoring method that ``training.logprobs.sequence_token_logprobs`` dispatches to for scorer models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from rlanything_core.models.encoder import FrozenPrecision, load_minilm
from rlanything_core.models.encoder_rows import EncoderRowModel
from rlanything_core.models.scorer_rows import DecodedRow

__all__ = ["EncoderScorerPolicy", "candidate_log_softmax", "minilm_scorer"]

TokenIds = tuple[int, ...]


def candidate_log_softmax(logits: Tensor, *, temperature: float) -> Tensor:
    """``log softmax(logits / temperature)`` over one step's candidates.

    Args:
        logits: ``(K,)`` scores of the ``K >= 1`` candidates.
        temperature: ``> 0``.

    Returns:
        ``(K,)`` log-probabilities (``logsumexp == 0``).
    """
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")
    if logits.ndim != 1 or logits.numel() == 0:
        raise ValueError(f"logits: expected shape (K,) with K >= 1, got {tuple(logits.shape)}")
    return torch.log_softmax(logits / temperature, dim=0)


class EncoderScorerPolicy(EncoderRowModel):
    """The bi-encoder policy (see the module docstring).

    Args:
        bert: a transformers ``BertModel`` (all-MiniLM-L6-v2 from :func:`load_minilm`).
        tokenizer: its tokenizer.
        trainable_layers: top encoder layers fine-tuned for the state (the rest frozen and cached).
        temperature: ``T`` of the action distribution (the trainer's log-probs use it; the selector samples with its
            own temperature, the same one in training).
        max_state_tokens: token budget of the state text, ``[CLS]``/``[SEP]`` included (longer texts are cut at the
            end, counted in ``stats["truncated_states"]``).
        max_command_tokens: token budget of a command.
        init_scale: initial cosine scale.
        cache_size: frozen-bottom outputs kept in memory (LRU).
        frozen_precision: the precision of the frozen bottom layers (``"float32"``, exact, or ``"bfloat16"``,
            faster; :class:`~rlanything_core.models.encoder.FrozenPrecision`).
        bucket_rows: texts per padded batch, grouped by length (0: one batch; the numbers change by float
            rounding; :class:`~rlanything_core.models.encoder.SplitEncoder`).
    """

    def __init__(
        self,
        bert: Any,
        tokenizer: Any,
        *,
        trainable_layers: int = 2,
        temperature: float = 1.0,
        max_state_tokens: int = 128,
        max_command_tokens: int = 24,
        init_scale: float = 20.0,
        cache_size: int = 2048,
        frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
        bucket_rows: int = 0,
    ) -> None:
        if max_command_tokens < 1:
            raise ValueError(f"max_command_tokens: expected >= 1, got {max_command_tokens}")
        if not init_scale > 0:
            raise ValueError(f"init_scale: expected > 0, got {init_scale!r}")
        super().__init__(
            bert,
            tokenizer,
            budget_name="max_state_tokens",
            budget=max_state_tokens,
            trainable_layers=trainable_layers,
            cache_size=cache_size,
            frozen_precision=frozen_precision,
            bucket_rows=bucket_rows,
        )
        hidden = self.encoder.hidden_size
        self.command_head = nn.Linear(hidden, hidden)
        with torch.no_grad():
            self.command_head.weight.copy_(torch.eye(hidden))
            self.command_head.bias.zero_()
        self.log_scale = nn.Parameter(torch.tensor(math.log(init_scale)))
        self.temperature = float(temperature)
        candidate_log_softmax(torch.zeros(1), temperature=self.temperature)  # validates the temperature
        self.max_state_tokens = int(max_state_tokens)
        self.max_command_tokens = int(max_command_tokens)
        self._command_ids: dict[str, TokenIds] = {}
        self.stats: dict[str, int] = {"states": 0, "truncated_states": 0}

    # ------------------------------------------------------------------------------------------------ text -> ids
    def state_ids(self, text: str) -> TokenIds:
        """The state text's ids within the budget (truncation at the end is counted)."""
        return self.cut_ids(text, self.max_state_tokens, self.stats, "states", "truncated_states")

    def command_ids(self, command: str) -> TokenIds:
        """A command's ids (memoized; cut at ``max_command_tokens``)."""
        found = self._command_ids.get(command)
        if found is None:
            ids = self.tokenizer(command, add_special_tokens=False)["input_ids"][: self.max_command_tokens]
            found = self._command_ids[command] = tuple(int(t) for t in ids) or (int(self.tokenizer.unk_token_id),)
        return found

    def pop_stats(self) -> dict[str, float]:
        """Counters since the last call (states, truncations, cache hits), then reset."""
        enc = self.encoder
        out = {
            **{k: float(v) for k, v in self.stats.items()},
            "state_cache_hits": float(enc.bottom_cache.stats.hits),
            "state_cache_misses": float(enc.bottom_cache.stats.misses),
            "command_cache_hits": float(enc.frozen_cache.stats.hits),
            "command_cache_misses": float(enc.frozen_cache.stats.misses),
        }
        self.stats = {k: 0 for k in self.stats}
        for cache in (enc.bottom_cache, enc.frozen_cache):
            cache.stats.hits = cache.stats.misses = 0
        return out

    # ------------------------------------------------------------------------------------------------ scores
    def logits(self, states: Sequence[TokenIds], candidates: Sequence[Sequence[TokenIds]]) -> list[Tensor]:
        """``scale * cos(f(s), g(a))`` of every candidate of every state (differentiable in the trainable parts).

        Args:
            states: ``N`` state id sequences.
            candidates: per state, its ``K_i >= 1`` command id sequences.

        Returns:
            ``N`` tensors of shape ``(K_i,)``.
        """
        if len(states) != len(candidates):
            raise ValueError(f"candidates: expected {len(states)} lists (one per state), got {len(candidates)}")
        for i, cands in enumerate(candidates):
            if not cands:
                raise ValueError(f"candidates[{i}]: expected at least one admissible command, got none")
        if not states:
            return []
        state_emb = nn.functional.normalize(self.encoder(states), dim=-1)  # (N, H)
        flat = [c for cands in candidates for c in cands]
        cmd_emb = nn.functional.normalize(self.command_head(self.encoder.frozen_embed(flat)), dim=-1)  # (sum K, H)
        scale = self.log_scale.exp()
        out = []
        start = 0
        for i, cands in enumerate(candidates):
            block = cmd_emb[start : start + len(cands)]
            out.append(scale * (block @ state_emb[i]))
            start += len(cands)
        return out

    def decision_logprobs(self, rows: Sequence[DecodedRow], indices: Sequence[int]) -> Tensor:
        """``log pi(chosen | state)`` of each row (the row scoring of :meth:`EncoderRowModel.row_logprobs`)."""
        logits = self.logits([r.text for r in rows], [r.candidates for r in rows])
        return torch.stack(
            [candidate_log_softmax(lg, temperature=self.temperature)[r.choice] for r, lg in zip(rows, logits)]
        )


def minilm_scorer(
    *,
    trainable_layers: int = 2,
    temperature: float = 1.0,
    max_state_tokens: int = 128,
    max_command_tokens: int = 24,
    init_scale: float = 20.0,
    cache_size: int = 2048,
    frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
    bucket_rows: int = 0,
    seed: int = 0,
) -> tuple[EncoderScorerPolicy, Any]:
    """``(policy, tokenizer)``: the all-MiniLM-L6-v2 bi-encoder scorer (Hydra ``model=minilm-scorer``).

    The keywords are :class:`EncoderScorerPolicy`'s, spelled out so that the config check refuses a misspelt key
    before any work (``rlanything_core/config_targets.py`` reads this signature). ``seed`` seeds nothing random today
    (the head starts at the identity); it is kept so every model family takes it.
    """
    torch.manual_seed(seed)
    bert, tokenizer = load_minilm()
    policy = EncoderScorerPolicy(
        bert,
        tokenizer,
        trainable_layers=trainable_layers,
        temperature=temperature,
        max_state_tokens=max_state_tokens,
        max_command_tokens=max_command_tokens,
        init_scale=init_scale,
        cache_size=cache_size,
        frozen_precision=frozen_precision,
        bucket_rows=bucket_rows,
    )
    return policy, tokenizer
