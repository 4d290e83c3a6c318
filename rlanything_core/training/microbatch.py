"""Length-aware micro-batching: group rows of similar length so padding (wasted compute) stays small.

The authors' trainer pads every sample to the longest in the dataset and uses batch size 1; sorting by length and
filling micro-batches up to a token budget trains the same tokens with a fraction of the padded positions.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["pack_by_length", "pack_by_tokens", "padded_token_count"]


def pack_by_length(lengths: Sequence[int], *, max_tokens: int, max_rows: int | None = None) -> list[list[int]]:
    """Split row indices into micro-batches whose padded size ``rows * longest`` stays within ``max_tokens``.

    Rows are sorted by length (longest first, so the biggest batch shapes come first and memory peaks early); a row
    longer than ``max_tokens`` gets a micro-batch of its own. Every index appears exactly once.

    Args:
        lengths: tokens per row.
        max_tokens: budget of padded tokens per micro-batch (``>= 1``).
        max_rows: optional cap on rows per micro-batch.

    Returns:
        Lists of row indices.

    Examples:
        >>> pack_by_length([5, 1, 4, 2], max_tokens=8)
        [[0], [2, 3], [1]]
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens: expected >= 1, got {max_tokens}")
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows: expected >= 1 or None, got {max_rows}")
    if any(n < 0 for n in lengths):
        raise ValueError("lengths: expected non-negative lengths")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        new_longest = max(longest, lengths[i])
        full = max_rows is not None and len(current) >= max_rows
        if current and (new_longest * (len(current) + 1) > max_tokens or full):
            batches.append(current)
            current, new_longest = [], lengths[i]
        current.append(i)
        longest = new_longest
    if current:
        batches.append(current)
    return batches


def pack_by_tokens(lengths: Sequence[int], *, max_tokens: int) -> list[list[int]]:
    """Split row indices into micro-batches of at most ``max_tokens`` real tokens each (packed rows: no padding).

    Rows are taken longest first (memory peaks early, as in ``pack_by_length``); a row longer than ``max_tokens``
    gets a micro-batch of its own. Every index appears exactly once.

    Examples:
        >>> pack_by_tokens([5, 1, 4, 2], max_tokens=8)
        [[0], [2, 3, 1]]
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens: expected >= 1, got {max_tokens}")
    if any(n < 0 for n in lengths):
        raise ValueError("lengths: expected non-negative lengths")
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        if current and total + lengths[i] > max_tokens:
            batches.append(current)
            current, total = [], 0
        current.append(i)
        total += lengths[i]
    if current:
        batches.append(current)
    return batches


def padded_token_count(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> int:
    """Positions a forward pass computes for ``batches`` (each padded to its own longest row)."""
    return sum(len(b) * max((lengths[i] for i in b), default=0) for b in batches)
