"""Pure sampling maths: temperature / top-p distributions, per-row seeded draws, stop-string search."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["find_stop", "row_generators", "row_seed", "sample_next", "sampling_probs"]

_GOLDEN = 0x9E3779B97F4A7C15


def sampling_probs(logits: Tensor, *, temperature: float, top_p: float = 1.0) -> Tensor:
    """Sampling distribution from logits: softmax at ``temperature``, then nucleus (top-p) truncation, renormalized.

    Args:
        logits: ``(B, V)`` next-token logits.
        temperature: ``> 0``.
        top_p: keep the smallest set of most likely tokens whose mass reaches ``top_p`` (ties broken by sort order;
            the most likely token is always kept).

    Returns:
        ``(B, V)`` float32 probabilities, each row summing to 1.
    """
    if temperature <= 0:
        raise ValueError(f"temperature: expected > 0 for sampling, got {temperature}")
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p >= 1.0:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    keep_sorted = mass_before < top_p
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return kept / kept.sum(dim=-1, keepdim=True)


def row_seed(seed: int, row: int) -> int:
    """The seed of prompt ``row`` of a call with ``seed``: a 31-bit mix, so every backend accepts it."""
    return (((seed + 1) * _GOLDEN) ^ ((row + 1) * 0x2545F4914F6CDD1D)) & 0x7FFFFFFF


def row_generators(seed: int, rows: Sequence[int]) -> list[torch.Generator]:
    """One CPU generator per prompt, seeded with :func:`row_seed` so draws do not depend on batching."""
    return [torch.Generator().manual_seed(row_seed(seed, row)) for row in rows]


def sample_next(logits: Tensor, *, temperature: float, top_p: float, generators: Sequence[torch.Generator]) -> Tensor:
    """Draw one next token per row.

    Args:
        logits: ``(B, V)`` next-token logits.
        temperature: ``0`` is greedy (argmax); otherwise see :func:`sampling_probs`.
        top_p: nucleus mass.
        generators: ``B`` generators, one per row.

    Returns:
        ``(B,)`` int64 token ids.
    """
    if temperature == 0:
        return logits.argmax(dim=-1)
    if len(generators) != logits.shape[0]:
        raise ValueError(f"generators: expected {logits.shape[0]} (one per row), got {len(generators)}")
    probs = sampling_probs(logits, temperature=temperature, top_p=top_p).cpu()
    draws = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(generators)]
    return torch.cat(draws).to(logits.device)


def find_stop(text: str, stop: Sequence[str]) -> int | None:
    """Index of the earliest occurrence of any stop string in ``text``, or ``None``."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return min(hits) if hits else None
