"""One store of frozen-bottom outputs for the policy and the judge: shared only where the two bottoms are the same
weights, split and precision; a text run by one is a hit (no recomputation) for the other, with the same tensors the
separate caches give; each model keeps its own counters."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlanything_core.models.encoder import SplitEncoder, load_minilm
from rlanything_core.models.encoder_judge import EncoderJudge
from rlanything_core.models.encoder_rows import share_frozen_bottom
from rlanything_core.models.scorer import EncoderScorerPolicy

TEXTS = ["task: put a clean mug in coffeemachine.\nholding: nothing", "observation: you see a mug 1, a fork 2.", "look"]


@pytest.fixture(scope="module")
def pretrained() -> tuple[Any, Any, Any]:
    bert_a, tokenizer = load_minilm()
    bert_b, _ = load_minilm()
    return bert_a, bert_b, tokenizer


def _fresh(pretrained: tuple[Any, Any, Any], **kwargs: Any) -> tuple[EncoderScorerPolicy, EncoderJudge, Any]:
    import copy

    bert_a, bert_b, tokenizer = pretrained
    policy = EncoderScorerPolicy(copy.deepcopy(bert_a), tokenizer, **kwargs)
    judge = EncoderJudge(copy.deepcopy(bert_b), tokenizer, **kwargs)
    return policy, judge, tokenizer


def _ids(tokenizer: Any) -> list[tuple[int, ...]]:
    return [tuple(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in TEXTS]


def _counting(encoder: SplitEncoder) -> list[int]:
    """Count the texts ``encoder`` runs through its frozen bottom (a recomputation)."""
    runs: list[int] = []
    original = encoder._bottom_uncached

    def counted(seqs: Any, **kwargs: Any) -> list[torch.Tensor]:
        runs.append(len(seqs))
        return original(seqs, **kwargs)

    encoder._bottom_uncached = counted  # type: ignore[method-assign]
    return runs


def test_the_same_pretrained_bottoms_share_one_store_and_a_hit_is_not_a_recomputation(
    pretrained: tuple[Any, Any, Any],
) -> None:
    policy, judge, tokenizer = _fresh(pretrained)
    assert policy.encoder.bottom_digest() == judge.encoder.bottom_digest()
    assert share_frozen_bottom(policy, judge)
    assert judge.encoder.bottom_cache.items is policy.encoder.bottom_cache.items
    assert policy.encoder.bottom_cache.capacity == judge.encoder.bottom_cache.capacity == 2 * 2048
    seqs = _ids(tokenizer)
    policy_runs, judge_runs = _counting(policy.encoder), _counting(judge.encoder)
    hidden_p, mask_p = policy.encoder.bottom(seqs)
    hidden_j, mask_j = judge.encoder.bottom(seqs)
    assert policy_runs == [3] and judge_runs == []  # the judge ran nothing: every text was the policy's
    assert torch.equal(hidden_p, hidden_j) and torch.equal(mask_p, mask_j)
    # each model counts its own lookups
    assert (policy.encoder.bottom_cache.stats.misses, policy.encoder.bottom_cache.stats.hits) == (3, 0)
    assert (judge.encoder.bottom_cache.stats.misses, judge.encoder.bottom_cache.stats.hits) == (0, 3)


def test_the_shared_store_gives_the_tensors_of_separate_caches(pretrained: tuple[Any, Any, Any]) -> None:
    shared_p, shared_j, tokenizer = _fresh(pretrained)
    assert share_frozen_bottom(shared_p, shared_j)
    apart_p, apart_j, _ = _fresh(pretrained)
    seqs = _ids(tokenizer)
    with torch.no_grad():
        shared_p.encoder.bottom(seqs)
        apart_p.encoder.bottom(seqs)
        # the judge's forward through its own top layers and head: the same numbers either way
        assert torch.equal(shared_j.vote_log_probs(seqs), apart_j.vote_log_probs(seqs))
        assert torch.equal(shared_j.encoder.bottom(seqs)[0], apart_j.encoder.bottom(seqs)[0])


def test_different_bottoms_keep_their_own_stores(pretrained: tuple[Any, Any, Any]) -> None:
    policy, judge, tokenizer = _fresh(pretrained)
    with torch.no_grad():  # another checkpoint's bottom: one weight differs in the lowest layer
        judge.encoder.bert.encoder.layer[0].output.dense.bias[0] += 1e-3
    assert policy.encoder.bottom_digest() != judge.encoder.bottom_digest()
    assert not share_frozen_bottom(policy, judge)
    assert judge.encoder.bottom_cache.items is not policy.encoder.bottom_cache.items
    other_split, other_judge, _ = _fresh(pretrained, trainable_layers=3)
    assert not share_frozen_bottom(other_split, judge)  # another split
    reduced_p, reduced_j, _ = _fresh(pretrained, frozen_precision="bfloat16")
    assert not share_frozen_bottom(policy, reduced_j)  # another precision
    assert share_frozen_bottom(reduced_p, reduced_j)  # the same bfloat16 bottoms share
    assert not share_frozen_bottom(policy, object())  # not an encoder model


def test_the_digest_follows_the_bottom_weights_only(pretrained: tuple[Any, Any, Any]) -> None:
    policy, judge, _ = _fresh(pretrained)
    before = policy.encoder.bottom_digest()
    with torch.no_grad():  # the trained top layers and the heads do not enter the cached outputs
        policy.encoder.bert.encoder.layer[-1].output.dense.bias += 1.0
        judge.head.bias += 1.0
    assert policy.encoder.bottom_digest() == before == judge.encoder.bottom_digest()
