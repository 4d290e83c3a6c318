"""Pure sampling maths: temperature / top-p distributions, per-row seeded draws, stop-string search."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["find_stop", "inverse_cdf", "prompt_seeds", "row_generators", "row_seed", "sample_next", "sampling_probs"]

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


def prompt_seeds(seed: int, count: int, seeds: Sequence[int] | None = None) -> list[int]:
    """The sampling seed of each of a call's ``count`` prompts: ``seeds`` when given, else ``row_seed(seed, i)``.

    Explicit seeds let a caller make a prompt's draws depend on what the prompt is (a task's group id and sample
    index), not on where it sits in the batch: the same prompt then samples the same in any batch, on any rank.

    Raises:
        ValueError: ``seeds`` does not hold one integer in ``[0, 2**31)`` per prompt (31 bits, as :func:`row_seed`).
    """
    if seeds is None:
        return [row_seed(seed, i) for i in range(count)]
    out = list(seeds)
    if len(out) != count:
        raise ValueError(f"seeds: expected one per prompt ({count}), got {len(out)}")
    for s in out:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31:
            raise ValueError(f"seeds: expected integers in [0, 2**31), got {s!r}")
    return out


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
    # The probabilities stay on the logits' device (on a GPU a (B, V) copy to the host every token, 64 x 152k floats
    # for Qwen, would dominate a decode step): only the B uniforms cross, the other way.
    probs = sampling_probs(logits, temperature=temperature, top_p=top_p)
    # One uniform per row from that row's own generator keeps every draw independent of the batch; the inverse-CDF
    # search then runs batched (a per-row `torch.multinomial` costs ~2 ms a row on this CPU, several passes over the
    # vocabulary in small kernels: a large share of a batched decode step of a 135M model).
    uniforms = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in generators])
    return inverse_cdf(probs, uniforms.to(probs.device))


_CDF_BLOCK = 256


def inverse_cdf(probs: Tensor, uniforms: Tensor) -> Tensor:
    """Per row, the first token whose cumulative weight exceeds ``uniform * total``: a categorical draw.

    The running sum is taken in blocks of 256 tokens: float32 within a block (its rounding is relative to the block's
    own mass) and float64 across block totals (a float32 sum over a 49k vocabulary would round at ~6e-8 of the mass
    so far, skewing rare tokens; a float64 one over the whole row is ~7x slower on CPU). The search finds the block,
    then the token inside it. Each target is kept strictly below the total of what it searches, so the token found
    always has positive weight: a zero-weight token (cut by top-p, or block padding) is never drawn, even when float
    rounding puts a target at the very end of the mass.

    Args:
        probs: ``(B, V)`` non-negative weights, each row with positive total (need not sum to 1).
        uniforms: ``(B,)`` float64 draws in ``[0, 1)``.

    Returns:
        ``(B,)`` int64 token ids.
    """
    if probs.ndim != 2 or uniforms.shape != probs.shape[:1]:
        raise ValueError(f"probs, uniforms: expected shapes (B, V) and (B,), got {tuple(probs.shape)} and "
                         f"{tuple(uniforms.shape)}")
    rows, vocab = probs.shape
    within = torch.nn.functional.pad(probs, (0, -vocab % _CDF_BLOCK)).view(rows, -1, _CDF_BLOCK).cumsum(dim=-1)
    block_ends = within[..., -1].double().cumsum(dim=-1)  # (B, blocks)
    total = block_ends[:, -1:]
    targets = torch.minimum(uniforms.double()[:, None] * total, torch.nextafter(total, torch.zeros_like(total)))
    block = torch.searchsorted(block_ends, targets, right=True)  # (B, 1); block_ends[block - 1] <= target
    block_start = torch.where(block > 0, block_ends.gather(1, (block - 1).clamp(min=0)), 0.0)
    local = within[torch.arange(rows), block[:, 0]].double()  # (B, block size)
    local_total = local[:, -1:]
    local_targets = torch.minimum(targets - block_start, torch.nextafter(local_total, torch.zeros_like(local_total)))
    offset = torch.searchsorted(local, local_targets, right=True)
    return (block * _CDF_BLOCK + offset)[:, 0]


def find_stop(text: str, stop: Sequence[str]) -> int | None:
    """Index of the earliest occurrence of any stop string in ``text``, or ``None``."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return min(hits) if hits else None
