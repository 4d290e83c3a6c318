import torch

from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.logprobs import sequence_token_logprobs


def _rows() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ids = torch.tensor([[5, 6, 7, 8, 9], [3, 4, 0, 0, 0]])
    attention = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    response = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 0, 0, 0]], dtype=torch.bool)
    return ids, attention, response


def test_scored_head_matches_full_forward_and_keeps_grad() -> None:
    model = tiny_causal_lm(32, hidden=16, layers=1, heads=2, kv_heads=1, seed=0)
    ids, attention, response = _rows()
    full = sequence_token_logprobs(model, ids, attention)
    scored = sequence_token_logprobs(model, ids, attention, score_mask=response)
    assert torch.allclose(torch.where(response, full, 0.0), scored, atol=1e-5)
    assert bool((scored[~response] == 0).all())
    scored.sum().backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters())


def test_full_forward_is_teacher_forcing() -> None:
    model = tiny_causal_lm(32, hidden=16, layers=1, heads=2, kv_heads=1, seed=1)
    ids, attention, _ = _rows()
    out = sequence_token_logprobs(model, ids, attention)
    logits = model(input_ids=ids[:1, :3]).logits
    expected = torch.log_softmax(logits[0, 1], -1)[ids[0, 2]]
    assert torch.allclose(out[0, 2], expected, atol=1e-5)
    assert out[1, 2:].abs().sum() == 0
