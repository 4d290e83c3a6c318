"""Evaluation games that cover every task type in proportion (not the first games of a split).

ALFWorld's splits are sorted by task type: the first 32 games of ``valid_seen`` hold only the two easiest types, so
a success rate on them says nothing about heating, cooling or picking two objects. :func:`stratified_sample` draws
``n`` games with each type's share of the split (largest-remainder rounding, at least one game per type when ``n``
allows), deterministically from a seed, and orders them so that every prefix is spread over the types too (the
evaluation labels only its first episodes with the planner).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["proportional_allocation", "stratified_sample"]

T = TypeVar("T")


def proportional_allocation(counts: dict[str, int], n: int) -> dict[str, int]:
    """How many of ``n`` draws each stratum gets, in proportion to its size.

    Every non-empty stratum first gets one draw when ``n`` is at least their number; the rest follow the strata's
    shares by the largest-remainder method (ties broken by the stratum's name). No stratum gets more than it holds.

    Args:
        counts: stratum name -> its size (``>= 0``).
        n: draws, ``0 <= n <= sum(counts)``.

    Returns:
        Stratum name -> draws (summing to ``n``).

    Raises:
        ValueError: a negative size, or ``n`` outside ``[0, sum(counts)]``.

    Examples:
        >>> proportional_allocation({"a": 30, "b": 10}, 4)
        {'a': 3, 'b': 1}
    """
    if any(c < 0 for c in counts.values()):
        raise ValueError(f"counts: expected sizes >= 0, got {counts}")
    total = sum(counts.values())
    if not 0 <= n <= total:
        raise ValueError(f"n: expected between 0 and the {total} items, got {n}")
    present = sorted(k for k, c in counts.items() if c > 0)
    take = {k: 0 for k in counts}
    if n >= len(present):
        for k in present:
            take[k] = 1
    remaining = n - sum(take.values())
    while remaining > 0:
        # share of what is still to draw, by what each stratum still holds: remainders decide the last draws
        room = {k: counts[k] - take[k] for k in present if counts[k] > take[k]}
        pool = sum(room.values())
        quota = {k: remaining * room[k] / pool for k in room}
        whole = {k: min(room[k], int(q)) for k, q in quota.items()}
        if sum(whole.values()) == 0:  # fewer draws than strata with room: the largest remainders take one each
            for k in sorted(room, key=lambda k: (-quota[k], k))[:remaining]:
                take[k] += 1
            break
        for k, w in whole.items():
            take[k] += w
        remaining -= sum(whole.values())
    return take


def stratified_sample(items: Sequence[T], n: int, *, stratum: Callable[[T], str], seed: int) -> list[T]:
    """``n`` of ``items`` drawn without replacement, each stratum in proportion (:func:`proportional_allocation`).

    Within a stratum the draw is uniform (``random.Random(seed)``, strata visited in name order). The result is
    interleaved: the ``i``-th of a stratum's ``k`` picks sits at position ``(i + 0.5) / k`` of the list, so any
    prefix covers the strata roughly in proportion too.

    Args:
        items: the population (e.g. a split's games, in the split's order).
        n: how many to draw, ``0 <= n <= len(items)``.
        stratum: the stratum of an item (e.g. ``lambda g: g.task_type``).
        seed: the draw's seed (the same items, ``n`` and seed give the same list).

    Raises:
        ValueError: ``n`` outside ``[0, len(items)]``.
    """
    if not 0 <= n <= len(items):
        raise ValueError(f"n: expected between 0 and the {len(items)} items, got {n}")
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(stratum(item), []).append(i)
    take = proportional_allocation({k: len(v) for k, v in groups.items()}, n)
    rng = random.Random(seed)
    keyed: list[tuple[float, str, int]] = []
    for name in sorted(groups):
        picked = sorted(rng.sample(groups[name], take[name]))
        keyed.extend(((j + 0.5) / len(picked), name, i) for j, i in enumerate(picked))
    return [items[i] for _, _, i in sorted(keyed)]
