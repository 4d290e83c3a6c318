"""Packed rows (one sequence, restarting positions, head only at scored positions) vs the padded path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.packing import (
    block_causal_mask,
    head_logprobs,
    pack_rows,
    packable,
    packed_token_logprobs,
)


def _rows(lengths: list[int], width: int, vocab: int = 300, seed: int = 0) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (len(lengths), width), generator=gen)
    positions = torch.arange(width)
    attention = positions < torch.tensor(lengths)[:, None]
    response = attention & (positions >= 2)
    return ids, attention, response


def _model(implementation: str = "sdpa", seed: int = 0) -> Any:
    model = tiny_causal_lm(300, hidden=32, layers=2, heads=4, kv_heads=2, seed=seed)
    model.set_attn_implementation(implementation)
    return model


def test_pack_rows_lays_out_sequences_back_to_back() -> None:
    ids, attention, response = _rows([4, 2, 3], 4)
    packed = pack_rows(ids, attention, response)
    assert packed.input_ids.tolist() == [[*ids[0, :4].tolist(), *ids[1, :2].tolist(), *ids[2, :3].tolist()]]
    assert packed.position_ids.tolist() == [[0, 1, 2, 3, 0, 1, 0, 1, 2]]
    assert packed.segments.tolist() == [[0, 0, 0, 0, 1, 1, 2, 2, 2]]
    # scored: row 0 cols 2,3 (predicted at packed 1,2); row 2 col 2 (predicted at packed 7); row 1 has none
    assert packed.predict.tolist() == [1, 2, 7]
    assert list(zip(packed.rows.tolist(), packed.cols.tolist())) == [(0, 2), (0, 3), (2, 2)]
    assert packed.targets.tolist() == [int(ids[0, 2]), int(ids[0, 3]), int(ids[2, 2])]


def test_pack_rows_refuses_left_padding_and_wrong_shapes() -> None:
    ids, attention, response = _rows([4, 2], 4)
    with pytest.raises(ValueError, match="right-padded"):
        pack_rows(ids, attention.flip(1))
    with pytest.raises(ValueError, match="attention_mask"):
        pack_rows(ids, attention[:, :3])
    with pytest.raises(ValueError, match="score_mask"):
        pack_rows(ids, attention, response[:1])


def test_block_causal_mask_never_crosses_sequences() -> None:
    mask = block_causal_mask(torch.tensor([[0, 0, 1, 1, 1]]))[0, 0]
    assert mask.tolist() == [
        [True, False, False, False, False],
        [True, True, False, False, False],
        [False, False, True, False, False],
        [False, False, True, True, False],
        [False, False, True, True, True],
    ]


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("scored", [True, False])
def test_packed_logprobs_equal_padded(implementation: str, scored: bool) -> None:
    model = _model(implementation)
    ids, attention, response = _rows([17, 3, 9, 12, 5, 1], 17)
    score = response if scored else None
    padded = sequence_token_logprobs(model, ids, attention, score_mask=score)
    packed = packed_token_logprobs(model, ids, attention, score_mask=score, chunk_tokens=7)
    assert packed.shape == padded.shape
    assert torch.allclose(packed, padded, atol=1e-5)
    assert bool((packed[~attention] == 0).all()) and bool((packed[:, 0] == 0).all())


def test_packed_gradients_equal_padded() -> None:
    model = _model()
    twin = copy.deepcopy(model)
    ids, attention, response = _rows([17, 3, 9, 12, 5], 17, seed=3)
    weights = torch.randn(ids.shape, generator=torch.Generator().manual_seed(1))
    (sequence_token_logprobs(model, ids, attention, score_mask=response) * weights).sum().backward()
    (packed_token_logprobs(twin, ids, attention, score_mask=response, chunk_tokens=5) * weights).sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert p.grad is not None and q.grad is not None
        assert torch.allclose(p.grad, q.grad, atol=1e-5), name


def test_head_logprobs_chunks_change_nothing() -> None:
    head = torch.nn.Linear(8, 50, bias=False)
    hidden = torch.randn(13, 8, requires_grad=True)
    targets = torch.randint(0, 50, (13,))
    whole = head_logprobs(head, hidden, targets, chunk_tokens=100)
    chunked = head_logprobs(head, hidden, targets, chunk_tokens=4)
    expected = torch.log_softmax(head(hidden), -1)[torch.arange(13), targets]
    assert torch.allclose(whole, expected, atol=1e-6) and torch.allclose(chunked, expected, atol=1e-6)
    (g_chunked,) = torch.autograd.grad(chunked.sum(), hidden)
    (g_expected,) = torch.autograd.grad(expected.sum(), hidden)
    assert torch.allclose(g_chunked, g_expected, atol=1e-6)
    with pytest.raises(ValueError, match="chunk_tokens"):
        head_logprobs(head, hidden, targets, chunk_tokens=0)
    with pytest.raises(ValueError, match="targets"):
        head_logprobs(head, hidden, targets[:3])


def test_packable_refuses_what_packing_cannot_drive() -> None:
    assert packable(_model())

    class Scorer(torch.nn.Module):
        def row_logprobs(self, *args: Any) -> torch.Tensor:
            raise AssertionError

    assert not packable(Scorer())
    capped = _model()
    capped.config.final_logit_softcapping = 30.0
    assert not packable(capped)
    with pytest.raises(ValueError, match="cannot be packed"):
        packed_token_logprobs(Scorer(), *_rows([2], 2)[:2])
