"""The frozen bottom's precision: float32 is the plain BERT computation to the bit; bfloat16 is close, not equal, and
follows the weights it was copied from; neither adds state; a bad name is a clear error."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlanything_core.models.encoder import FrozenPrecision, SplitEncoder, load_minilm

TEXTS = ["task: put a clean mug in coffeemachine.\nholding: nothing", "observation: you see a mug 1, a fork 2.", "look"]


@pytest.fixture(scope="module")
def encoders() -> tuple[SplitEncoder, SplitEncoder, Any]:
    bert, tokenizer = load_minilm()
    exact = SplitEncoder.for_tokenizer(bert, tokenizer, trainable_layers=2)
    bert2, _ = load_minilm()
    reduced = SplitEncoder.for_tokenizer(bert2, tokenizer, trainable_layers=2, frozen_precision="bfloat16")
    return exact, reduced, tokenizer


def _ids(tokenizer: Any) -> list[tuple[int, ...]]:
    return [tuple(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in TEXTS]


def test_float32_is_the_plain_bert_bottom_to_the_bit(encoders: tuple[SplitEncoder, SplitEncoder, Any]) -> None:
    exact, _, tokenizer = encoders
    seqs = _ids(tokenizer)
    exact.bottom_cache.items.clear()
    hidden, mask = exact.bottom(seqs)
    # the reference: BertModel's own embeddings and layers on the same padded batch (missing texts run sorted)
    order = sorted(set(seqs))
    wrapped = [[tokenizer.cls_token_id, *s, tokenizer.sep_token_id] for s in order]
    length = max(len(w) for w in wrapped)
    ids = torch.tensor([w + [0] * (length - len(w)) for w in wrapped])
    attn = torch.tensor([[1] * len(w) + [0] * (length - len(w)) for w in wrapped])
    with torch.no_grad():
        ref = exact.bert.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
        mask4d = exact._mask4d(ref, attn.bool())
        for layer in exact.bert.encoder.layer[: exact.split]:
            ref = layer(ref, mask4d)
    for i, s in enumerate(seqs):
        n = len(s) + 2
        assert mask[i].sum() == n
        assert torch.equal(hidden[i, :n], ref[order.index(s), :n])


def test_bfloat16_is_close_to_float32_but_not_equal(encoders: tuple[SplitEncoder, SplitEncoder, Any]) -> None:
    exact, reduced, tokenizer = encoders
    seqs = _ids(tokenizer)
    with torch.no_grad():
        a, b = exact(seqs), reduced(seqs)
        assert a.dtype == b.dtype == torch.float32
        cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
        assert (cos > 0.995).all(), cos
        assert not torch.equal(a, b)
        # the commands' frozen embeddings stay float32 in both
        assert torch.equal(exact.frozen_embed(seqs), reduced.frozen_embed(seqs))


def test_the_bfloat16_copy_follows_loaded_weights_and_adds_no_state(
    encoders: tuple[SplitEncoder, SplitEncoder, Any],
) -> None:
    exact, reduced, tokenizer = encoders
    assert list(reduced.state_dict()) == list(exact.state_dict())
    assert [n for n, _ in reduced.named_parameters()] == [n for n, _ in exact.named_parameters()]
    seqs = _ids(tokenizer)[:1]
    reduced.bottom_cache.items.clear()
    before = reduced.bottom(seqs)[0]
    state = {k: v.clone() for k, v in reduced.state_dict().items()}
    key = "bert.encoder.layer.0.intermediate.dense.weight"
    original = state[key].clone()
    state[key].mul_(1.5)
    reduced.load_state_dict(state)
    reduced.bottom_cache.items.clear()
    try:
        assert not torch.equal(reduced.bottom(seqs)[0], before)
    finally:
        state[key] = original
        reduced.load_state_dict(state)
        reduced.bottom_cache.items.clear()
    assert torch.equal(reduced.bottom(seqs)[0], before)


def test_an_unknown_precision_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"frozen_precision: expected one of 'float32', 'bfloat16', got 'int8'"):
        FrozenPrecision.parse("int8")
    assert FrozenPrecision.parse("bfloat16") is FrozenPrecision.BFLOAT16
