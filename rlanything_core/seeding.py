"""Deterministic seeds derived from keys.

What a rollout samples depends on *which* rollout it is (run seed, iteration, task group, rollout, step), never on
batch composition, worker count or rank.
"""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(*keys: int | str) -> int:
    """A 63-bit seed from a tuple of keys (stable across processes and Python versions).

    Examples:
        >>> derive_seed(0, 1, 2) == derive_seed(0, 1, 2), derive_seed(0, 1, 2) != derive_seed(0, 2, 1)
        (True, True)
    """
    digest = hashlib.blake2b(repr(tuple(keys)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
