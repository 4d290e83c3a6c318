"""Hypothesis strategies drawing ragged :class:`StepBatch` es, and a helper that re-pads a batch with garbage.

The structure (groups of uneven sizes >= 1 with sparse, shuffled ids; per-rollout step counts; ``m`` votes; extra
padded steps and vote slots) is drawn by hypothesis so it shrinks; the contents (vote signs, which votes are requested
or unparseable, the garbage in the padding) come from a drawn seed and ``torch.Generator``, which keeps drawing fast.
Needs the ``dev`` extra (hypothesis).
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st

from rlanything_core.types import StepBatch

__all__ = [
    "BANDS",
    "FLOAT_DTYPES",
    "GARBAGE",
    "band_edge_groups",
    "equal_reward_rows",
    "hyperparameter_values",
    "step_batches",
    "with_garbage_padding",
]

GARBAGE: tuple[float, ...] = (float("nan"), float("inf"), -float("inf"), 1e30, -7.0, 3.0)
"""Values written into padding: every function must ignore them."""

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
"""Every floating dtype a rate or reward may arrive in (collate builds float32 outcomes)."""

BANDS: tuple[tuple[float, float], ...] = ((0.2, 0.8), (1 / 8, 7 / 8), (0.25, 0.75), (0.0, 1.0), (0.2, 0.2))
"""Success-rate bands the project uses (judge, AlfWorld policy) and a few with other exactly-hit edges."""


def _garbage(shape: tuple[int, ...], generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    pool = torch.tensor(GARBAGE, dtype=dtype)
    return pool[torch.randint(len(GARBAGE), shape, generator=generator)]


@st.composite
def step_batches(
    draw: Any,
    *,
    max_groups: int = 4,
    max_group_size: int = 6,
    min_steps: int = 1,
    max_steps: int = 6,
    max_votes: int = 4,
    with_votes: bool = True,
    dtype: torch.dtype = torch.float64,
) -> StepBatch:
    """Draw a ragged, right-padded :class:`StepBatch`.

    Groups have sizes ``1..max_group_size`` and sparse ids in shuffled order; rollouts have ``min_steps..max_steps``
    steps, plus 0-2 padded step columns; ``m`` in ``1..max_votes`` requested vote slots (some not requested, some
    unparseable, in proportions drawn per batch) plus 0-1 padded vote slots. Outcomes are ``+1``/``-1``. Every
    position outside the masks holds garbage (NaN, inf, 1e30, ...).
    """
    num_groups = draw(st.integers(1, max_groups))
    ids = draw(st.lists(st.integers(0, 60), min_size=num_groups, max_size=num_groups, unique=True))
    sizes = draw(st.lists(st.integers(1, max_group_size), min_size=num_groups, max_size=num_groups))
    group = [g for g, n in zip(ids, sizes) for _ in range(n)]
    order = draw(st.permutations(range(len(group))))
    group = [group[i] for i in order]
    b = len(group)
    lengths = draw(st.lists(st.integers(min_steps, max_steps), min_size=b, max_size=b))
    wins = draw(st.lists(st.booleans(), min_size=b, max_size=b))
    s = max(lengths) + draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    outcome = torch.tensor([1.0 if w else -1.0 for w in wins], dtype=dtype)
    step_mask = torch.arange(s).unsqueeze(0) < torch.tensor(lengths, dtype=torch.int64).unsqueeze(1)
    group_index = torch.tensor(group, dtype=torch.int64)
    if not with_votes:
        return StepBatch(outcome=outcome, step_mask=step_mask, group_index=group_index)
    m = draw(st.integers(1, max_votes))
    width = m + draw(st.integers(0, 1))
    p_request = draw(st.sampled_from([1.0, 1.0, 0.7]))
    p_valid = draw(st.sampled_from([1.0, 0.8, 0.5, 0.0]))
    p_plus = draw(st.sampled_from([0.5, 0.5, 1.0, 0.0]))
    slot = torch.arange(width).view(1, 1, width) < m
    vote_mask = step_mask.unsqueeze(-1) & slot & (torch.rand(b, s, width, generator=gen) < p_request)
    vote_valid = vote_mask & (torch.rand(b, s, width, generator=gen) < p_valid)
    signs = torch.where(torch.rand(b, s, width, generator=gen) < p_plus, 1.0, -1.0).to(dtype)
    votes = torch.where(vote_valid, signs, _garbage((b, s, width), gen, dtype))
    return StepBatch(outcome, step_mask, group_index, votes, vote_mask, vote_valid)


def with_garbage_padding(batch: StepBatch, *, extra_steps: int, extra_votes: int, seed: int = 0) -> StepBatch:
    """Re-pad ``batch``: ``extra_steps`` more step columns, ``extra_votes`` more vote slots, new garbage off-mask.

    The rollouts are the same, so every output on a real cell must be unchanged and every padded cell 0.
    """
    gen = torch.Generator().manual_seed(seed)
    b, s = batch.step_mask.shape
    step_mask = torch.cat([batch.step_mask, torch.zeros(b, extra_steps, dtype=torch.bool)], dim=1)
    if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
        return StepBatch(batch.outcome, step_mask, batch.group_index)
    m = batch.votes.shape[2]
    shape = (b, s + extra_steps, m + extra_votes)

    def grow(mask: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(shape, dtype=torch.bool)
        out[:, :s, :m] = mask
        return out

    vote_mask, vote_valid = grow(batch.vote_mask), grow(batch.vote_valid)
    votes = _garbage(shape, gen, batch.votes.dtype)
    votes[:, :s, :m] = batch.votes
    votes = torch.where(vote_valid, votes, _garbage(shape, gen, batch.votes.dtype))
    return StepBatch(batch.outcome, step_mask, batch.group_index, votes, vote_mask, vote_valid)


@st.composite
def band_edge_groups(draw: Any, *, max_groups: int = 5, max_group_size: int = 40) -> list[tuple[int, int]]:
    """``(successes k, size n)`` of task groups whose rate ``k/n`` is mostly ON an edge of a band in :data:`BANDS`.

    Edges ``0.2 = 1/5, 2/10, 4/20``, ``0.8 = 4/5, 8/10``, ``1/8``, ``7/8`` ... are where a rate rounded through
    float32 leaves an inclusive band; the other groups get arbitrary ``k``.
    """
    groups = []
    for _ in range(draw(st.integers(1, max_groups))):
        band = draw(st.sampled_from(BANDS))
        edge = draw(st.sampled_from(band))
        denominators = [n for n in range(1, max_group_size + 1) if abs(edge * n - round(edge * n)) < 1e-9]
        if denominators and draw(st.booleans()):
            n = draw(st.sampled_from(denominators))
            groups.append((round(edge * n), n))
        else:
            n = draw(st.integers(1, max_group_size))
            groups.append((draw(st.integers(0, n)), n))
    return groups


@st.composite
def equal_reward_rows(draw: Any, *, max_size: int = 64) -> tuple[torch.Tensor, float]:
    """A row of ``K`` equal rewards (an awkward ``K`` and an inexact value such as ``1/3``) in a drawn dtype."""
    size = draw(st.integers(1, max_size))
    numerator = draw(st.integers(-12, 12))
    denominator = draw(st.integers(1, 12))
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    value = numerator / denominator * draw(st.sampled_from([1.0, 1.0, 1e-3, 1e3]))
    return torch.full((size,), value, dtype=dtype), value


def hyperparameter_values() -> st.SearchStrategy[float]:
    """Floats for hyperparameters, with NaN, +-inf, signed zeros and subnormals drawn often."""
    return st.one_of(
        st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 5e-324, 1.0, -1.0]),
        st.floats(allow_nan=True, allow_infinity=True),
    )
