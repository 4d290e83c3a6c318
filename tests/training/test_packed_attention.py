"""Packed attention without a dense mask: the kernels' inputs, their equality with the padded path, their work.

Where a backend's kernel runs here it runs for real: flex attention's forward on the CPU (its backward is
CUDA-only), torch's ``varlen_attn`` on ``meta`` tensors (its registered shape function: what a GPU would be asked to
compute, without the arithmetic). The flash-attn packages are not installed on CPUs; their call is checked with a
stand-in module that records its arguments.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training import packed_attention as pa
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.packing import pack_rows, packed_token_logprobs


def _rows(lengths: list[int], vocab: int = 300, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(1, vocab, (len(lengths), width), generator=gen)
    positions = torch.arange(width)
    attention = positions < torch.tensor(lengths)[:, None]
    return ids, attention, attention & (positions >= 2)


def _model(implementation: str = "sdpa", device: str = "cpu") -> Any:
    model = tiny_causal_lm(300, hidden=32, layers=2, heads=4, kv_heads=2, seed=0)
    model.set_attn_implementation(implementation)
    return model.to(device)


def _record_attention(model: Any, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every attention call of ``model`` from here on: the mask's shape and whether a ``PackedAttention`` came."""
    calls: list[dict[str, Any]] = []
    name = model.config._attn_implementation
    inner = ALL_ATTENTION_FUNCTIONS[name]

    def recording(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any) -> Any:
        shape = None if attention_mask is None else tuple(attention_mask.shape)
        calls.append({"mask": shape, "packed": kwargs.get(pa.PACKED_KEYWORD), "tokens": query.shape[2]})
        return inner(module, query, key, value, attention_mask, **kwargs)

    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS._global_mapping, name, recording)
    return calls


def test_select_backend_picks_sdpa_per_sequence_on_cpu_and_refuses_bad_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLANYTHING_PACKED_ATTENTION", raising=False)
    assert pa.select_backend("cpu") == "segments"
    assert pa.select_backend("cpu", "flex_attention") == "flex_attention"
    monkeypatch.setenv("RLANYTHING_PACKED_ATTENTION", "varlen")
    assert pa.select_backend("cpu") == "varlen"
    with pytest.raises(ValueError, match="attention"):
        pa.select_backend("cpu", "flash_attention_9")


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_the_installed_wrapper_leaves_the_padded_path_unchanged(implementation: str) -> None:
    model = _model(implementation)
    ids, attention, response = _rows([11, 4, 7])
    before = sequence_token_logprobs(model, ids, attention, score_mask=response)
    prompt = ids[:2, :5]
    greedy = {"max_new_tokens": 6, "do_sample": False, "pad_token_id": 0}
    generated = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), **greedy)
    name = pa.install_packed_attention(model)
    assert name == f"rlanything_packed_{implementation}" and pa.install_packed_attention(model) == name
    after = sequence_token_logprobs(model, ids, attention, score_mask=response)
    assert torch.equal(before, after)
    # the rollouts' path too (a KV cache, the same model object): the same tokens
    again = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), **greedy)
    assert torch.equal(generated, again)


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_flex_attention_logprobs_equal_the_padded_path(implementation: str) -> None:
    model = _model(implementation)
    ids, attention, response = _rows([37, 5, 20, 16, 1, 9], seed=2)
    with torch.no_grad():  # flex attention's backward runs on CUDA only
        padded = sequence_token_logprobs(model, ids, attention, score_mask=response)
        packed = packed_token_logprobs(
            model, ids, attention, score_mask=response, attention="flex_attention", block_size=16
        )
    assert torch.allclose(packed, padded, atol=1e-5)


def test_flex_attention_backward_is_refused_on_cpu_not_silently_wrong() -> None:
    model = _model()
    ids, attention, response = _rows([9, 5])
    with pytest.raises(NotImplementedError, match="backward"):
        packed_token_logprobs(model, ids, attention, score_mask=response, attention="flex_attention", block_size=16)


@pytest.mark.parametrize("backend", ["dense", "segments"])
def test_the_cpu_paths_gradients_equal_the_padded_path(backend: str) -> None:
    model, twin = _model(), _model()
    ids, attention, response = _rows([17, 3, 9, 12, 5], seed=3)
    weights = torch.randn(ids.shape, generator=torch.Generator().manual_seed(1))
    (sequence_token_logprobs(model, ids, attention, score_mask=response) * weights).sum().backward()
    (packed_token_logprobs(twin, ids, attention, score_mask=response, attention=backend) * weights).sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert p.grad is not None and q.grad is not None
        assert torch.allclose(p.grad, q.grad, atol=1e-5), name


def test_only_the_dense_reference_passes_a_t_by_t_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    lengths = [30, 7, 18]
    total = sum(lengths)
    ids, attention, response = _rows(lengths)
    for backend, device in (("dense", "cpu"), ("segments", "cpu"), ("segments", "meta"), ("flex_attention", "cpu"),
                            ("varlen", "meta")):
        model = _model(device=device)
        pa.install_packed_attention(model)
        calls = _record_attention(model, monkeypatch)
        with torch.no_grad():
            packed_token_logprobs(
                model, ids.to(device), attention, score_mask=response, attention=backend, block_size=16
            )
        assert len(calls) == model.config.num_hidden_layers, backend
        for call in calls:
            assert call["tokens"] == total
            if backend == "dense":
                assert call["mask"] == (1, 1, total, total) and call["packed"] is None
            else:  # no dense mask: a block mask (flex, its own compressed form) or the empty marker
                assert call["packed"] is not None and call["packed"].backend == backend
                if device == "cpu":
                    assert call["packed"].cu_seq_lens.tolist() == [0, 30, 37, 55]
                assert call["mask"] in ((1, 1, 0, 0), (1, 1, total, total)), call["mask"]
                if backend == "varlen":
                    assert call["mask"] == (1, 1, 0, 0)


def test_the_kernels_receive_host_offsets_and_compute_sum_of_squares_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The varlen kernel is asked for ``sum(len (len + 1) / 2)`` pairs: the padded loop's work, not ``T^2``."""
    from torch.nn.attention import varlen

    seen: list[int] = []
    calls: list[Any] = []
    real = varlen.varlen_attn

    def counting(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, **kwargs: Any) -> Any:
        assert cu_q is cu_k and max_q == max_k and kwargs["window_size"] == (-1, 0)
        assert q.shape[0] == k.shape[0] and q.dim() == 3  # (T, H, D): one packed row, no padding
        seen.append(max_q)
        calls.append(cu_q)
        return real(q, k, v, cu_q, cu_k, max_q, max_k, **kwargs)

    monkeypatch.setattr(varlen, "varlen_attn", counting)
    work = {}
    captured: list[Any] = []
    original = pa.packed_attention

    def capture(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        captured.append(out)
        return out

    monkeypatch.setattr("rlanything_core.training.packing.packed_attention", capture)
    for lengths in ([64] * 8, [512], [256, 128, 64, 64]):
        ids, attention, response = _rows(lengths)
        model = _model(device="meta")
        captured.clear()
        calls.clear()
        seen.clear()
        with torch.no_grad():
            packed_token_logprobs(model, ids.to("meta"), attention, score_mask=response, attention="varlen")
        assert len(calls) == model.config.num_hidden_layers
        (built,) = captured
        assert built.lengths == tuple(lengths) and built.max_len == max(lengths)
        assert all(cu is built.cu_seq_lens for cu in calls)  # every layer's kernel got these offsets, built once
        assert seen == [max(lengths)] * len(calls)
        work[tuple(lengths)] = pa.attention_pairs(built)
        assert work[tuple(lengths)] == sum(n * (n + 1) // 2 for n in lengths)
    # the same 512 tokens: eight sequences of 64 cost an eighth of one of 512 (a dense mask costs 512^2 for both)
    assert work[(512,)] / work[(64,) * 8] == pytest.approx(8, rel=0.02)


def test_the_flex_block_mask_touches_only_the_diagonal_blocks() -> None:
    block = 16
    for lengths in ([block] * 8, [4 * block, 2 * block, 2 * block]):
        ids, attention, _ = _rows(lengths)
        packed = pack_rows(ids, attention)
        kernel = pa.packed_attention(packed.segments, list(packed.lengths), "flex_attention", block_size=block)
        # a sequence of b blocks touches b (b + 1) / 2 blocks: sum(len^2)-proportional, never (T / block)^2
        expected = sum((n // block) * (n // block + 1) // 2 for n in lengths) * block * block
        assert pa.attention_pairs(kernel) == expected
        assert pa.attention_pairs(kernel) < sum(lengths) ** 2 / 2


def test_flash_attention_receives_the_varlen_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flash-attn packages (absent on CPUs) get ``flash_attn_varlen_func(q, k, v, cu, cu, max, max, causal)``."""
    calls: list[dict[str, Any]] = []

    def flash_attn_varlen_func(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, **kw: Any) -> Any:
        calls.append({"cu": cu_q.tolist(), "max": (max_q, max_k), "dtype": q.dtype, **kw})
        return torch.zeros_like(q)

    stand_in = types.ModuleType("flash_attn")
    stand_in.flash_attn_varlen_func = flash_attn_varlen_func  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flash_attn", stand_in)
    model = _model()
    ids, attention, response = _rows([12, 5, 9])
    with torch.no_grad():
        packed_token_logprobs(model, ids, attention, score_mask=response, attention="flash_attention_2")
    assert len(calls) == model.config.num_hidden_layers
    for call in calls:
        assert call["cu"] == [0, 12, 17, 26] and call["max"] == (12, 12) and call["causal"] is True
        assert call["dtype"] == torch.bfloat16 and call["window_size"] == (-1, 0)


def test_packed_attention_refuses_inconsistent_lengths() -> None:
    segments = torch.zeros((1, 10), dtype=torch.int64)
    with pytest.raises(ValueError, match="lengths"):
        pa.packed_attention(segments, [4, 5], "varlen")
    with pytest.raises(ValueError, match="backend"):
        pa.packed_attention(segments, [10], "dense")


def test_an_activation_checkpointing_recompute_runs_the_same_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backward's recompute of a checkpointed layer calls attention with the forward's arguments: the varlen
    kernel again, never the model's base attention without a mask (which would attend across sequences)."""
    from torch.nn.attention import varlen

    model = _model(device="meta")
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    pa.install_packed_attention(model)
    calls = _record_attention(model, monkeypatch)
    kernels: list[int] = []
    real = varlen.varlen_attn

    def counting(*args: Any, **kwargs: Any) -> Any:
        kernels.append(args[5])
        return real(*args, **kwargs)

    monkeypatch.setattr(varlen, "varlen_attn", counting)
    ids, attention, response = _rows([14, 6, 9])
    packed_token_logprobs(model, ids.to("meta"), attention, score_mask=response, attention="varlen").sum().backward()
    layers = model.config.num_hidden_layers
    assert len(calls) == 2 * layers  # the forward, then the recompute in the backward
    assert all(call["packed"] is not None and call["mask"] == (1, 1, 0, 0) for call in calls)
    assert kernels == [14] * (2 * layers)


def test_a_flash_attn_build_that_does_not_import_is_passed_over(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "flash_attn"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('undefined symbol: built for another torch')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "flash_attn", raising=False)
    assert not pa._available("flash_attention_2", torch.device("cuda"))
    assert not pa._available("flash_attention_2", torch.device("cpu"))  # and never on a CPU


@pytest.mark.parametrize("window", [None, 3])
def test_per_sequence_sdpa_equals_naive_attention_with_grouped_heads_and_a_window(window: int | None) -> None:
    lengths = [5, 1, 8]
    gen = torch.Generator().manual_seed(4)
    query = torch.randn(1, 4, sum(lengths), 8, generator=gen)
    key, value = (torch.randn(1, 2, sum(lengths), 8, generator=gen) for _ in range(2))  # 2 K/V heads for 4 queries
    segments = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))[None]
    packed = pa.packed_attention(segments, lengths, "segments")
    out = pa.run_packed(packed, query, key, value, scaling=None, sliding_window=window)
    assert out.shape == (1, sum(lengths), 4, 8)
    pos = torch.arange(sum(lengths))
    seen = (segments[0][:, None] == segments[0][None, :]) & (pos[None, :] <= pos[:, None])
    if window is not None:
        seen &= pos[None, :] > pos[:, None] - window
    k, v = (x.repeat_interleave(2, dim=1) for x in (key, value))
    scores = (query @ k.transpose(-1, -2) / 8**0.5).masked_fill(~seen, float("-inf"))
    expected = (scores.softmax(-1) @ v).transpose(1, 2)
    assert torch.allclose(out, expected, atol=1e-5)
