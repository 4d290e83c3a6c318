"""``python -m benchmarks.bench_update``: both sides on the same rows, in one run (tiny sizes here)."""

from __future__ import annotations

import pytest
import torch

from benchmarks import bench_update


def test_both_sides_train_the_same_tokens_and_report_ratio_and_peaks() -> None:
    args = bench_update.arguments(
        device="cpu", shape="small", rows=4, min_len=8, max_len=40, reps=1, fsdp=False, threads=1
    )
    result = bench_update.compare(args)
    lib, plain = result["library"], result["plain"]
    assert lib["tokens"] == plain["tokens"] > 0 and lib["response_tokens"] == plain["response_tokens"] > 0
    assert lib["tokens_per_s"] > 0 and plain["tokens_per_s"] > 0
    assert result["ratio"] == pytest.approx(lib["tokens_per_s"] / plain["tokens_per_s"], rel=1e-2)
    assert lib["peak_over_start_mib"] >= 0 and plain["peak_over_start_mib"] >= 0


def test_rows_are_uneven_right_padded_and_scored_at_the_end() -> None:
    rows = bench_update.make_rows(8, 5, 30, response_frac=0.25, vocab=100, seed=0).rows
    lengths = rows.attention_mask.sum(dim=1)
    assert len(set(lengths.tolist())) > 1
    assert bool((rows.input_ids[~rows.attention_mask] == 0).all())
    assert bool((rows.response_mask <= rows.attention_mask).all()) and bool(rows.response_mask.any(dim=1).all())
    assert not bool(rows.response_mask[:, 0].any())


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="min_len <= max_len"):
        bench_update.make_rows(2, 10, 5, response_frac=0.25, vocab=100)
    with pytest.raises(ValueError, match="shape: expected 'small'"):
        bench_update.build_model("qwen9", device=torch.device("cpu"))
