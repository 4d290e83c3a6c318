"""Texts run in length groups (``bucket_rows``): the same embeddings and gradients as one padded batch, up to float
rounding, each in its own place; groups are by increasing length; 0 is the one-batch computation to the bit."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from rlanything_core.models.encoder import SplitEncoder, length_groups, load_minilm


def test_groups_are_by_increasing_length_with_ties_in_order() -> None:
    assert length_groups([5, 1, 3, 1, 9], 2) == [[1, 3], [2, 0], [4]]
    assert length_groups([5, 1, 3], 0) == [[0, 1, 2]]  # off: one group, in the given order
    assert length_groups([5, 1, 3], 3) == [[0, 1, 2]]  # no more texts than a group holds: as off
    assert length_groups([], 4) == []
    with pytest.raises(ValueError, match="bucket_rows: expected >= 0"):
        length_groups([1], -1)


@pytest.fixture(scope="module")
def models() -> tuple[SplitEncoder, SplitEncoder, SplitEncoder]:
    bert, tokenizer = load_minilm()
    one_batch = SplitEncoder.for_tokenizer(bert, tokenizer, trainable_layers=2)
    grouped = SplitEncoder.for_tokenizer(load_minilm()[0], tokenizer, trainable_layers=2, bucket_rows=3)
    off = SplitEncoder.for_tokenizer(load_minilm()[0], tokenizer, trainable_layers=2, bucket_rows=0)
    return one_batch, grouped, off


def _seqs(n: int = 11, seed: int = 0) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.randrange(1000, 20000) for _ in range(rng.randint(3, 60))) for _ in range(n)]


def test_grouped_embeddings_equal_one_batch_up_to_rounding_in_place(models: Any, monkeypatch: Any) -> None:
    one_batch, grouped, off = models
    seqs = _seqs()
    for model in models:
        model.bottom_cache.items.clear()
        model.frozen_cache.items.clear()
    batches: list[int] = []
    run = SplitEncoder._bottom_batch

    def counted(self: SplitEncoder, group: Any, **kwargs: Any) -> Any:
        batches.append(len(group))
        return run(self, group, **kwargs)

    monkeypatch.setattr(SplitEncoder, "_bottom_batch", counted)
    with torch.no_grad():
        want, got, same = one_batch(seqs), grouped(seqs), off(seqs)
    assert batches == [11, 3, 3, 3, 2, 11]  # the grouped model ran 4 padded batches
    assert torch.equal(same, want)  # 0: the one-batch path itself
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)  # each row in its own place: rows differ by ~1
    assert float((want[:-1] - want[1:]).abs().max()) > 0.1
    torch.testing.assert_close(grouped.frozen_embed(seqs), one_batch.frozen_embed(seqs), atol=1e-5, rtol=1e-5)


def test_grouped_gradients_equal_one_batch_up_to_rounding(models: Any) -> None:
    one_batch, grouped, _ = models
    seqs = _seqs(seed=1)
    weights = torch.randn(len(seqs), one_batch.hidden_size, generator=torch.Generator().manual_seed(0))
    grads = []
    for model in (one_batch, grouped):
        model.zero_grad(set_to_none=True)
        (model(seqs) * weights).sum().backward()
        grads.append([p.grad for p in model.parameters() if p.requires_grad])
    assert grads[0] and all(g is not None for g in grads[1])
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("rows", [-1, True, 1.5])
def test_a_bad_group_size_is_refused(rows: Any) -> None:
    bert, tokenizer = load_minilm()
    with pytest.raises(ValueError, match="bucket_rows: expected an integer >= 0"):
        SplitEncoder.for_tokenizer(bert, tokenizer, bucket_rows=rows)
