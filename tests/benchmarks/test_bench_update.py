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


def test_the_configuration_is_train_py_s_at_the_scale_and_is_reported() -> None:
    gpu, cpu = bench_update.training_configuration("cuda"), bench_update.training_configuration("cpu")
    assert gpu == {"scale": "1gpu", "fsdp": True, "activation_checkpointing": True, "micro_batch_tokens": 8192}
    assert cpu == {"scale": "cpu", "fsdp": False, "activation_checkpointing": False, "micro_batch_tokens": 8192}
    defaults = bench_update.parser().parse_args([])
    expected = gpu if torch.cuda.is_available() else cpu
    assert (defaults.fsdp, defaults.checkpointing, defaults.micro_batch_tokens) == (
        expected["fsdp"],
        expected["activation_checkpointing"],
        expected["micro_batch_tokens"],
    )


def test_update_flops_count_sum_of_squares_attention_and_the_head_at_responses_only() -> None:
    from transformers import Qwen2Config

    config = Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=1000)  # fmt: skip
    base = bench_update.update_flops(config, [8, 8], 0)
    # one sequence of 16 tokens: the same linear work, (16*17/2) - 2*(8*9/2) = 64 more attention pairs
    longer = bench_update.update_flops(config, [16], 0)
    assert longer - base == 4 * (4 * 2 * 4 * 16 * 64)
    assert bench_update.update_flops(config, [8, 8], 5) - base == 4 * 2 * 1000 * 64 * 5
    name, peak = bench_update.peak_matrix_flops("cpu")
    assert peak is None and isinstance(name, str)


def test_a_cpu_run_reports_the_configuration_it_measured(capsys: pytest.CaptureFixture[str]) -> None:
    args = bench_update.arguments(device="cpu", shape="small", rows=3, min_len=8, max_len=24, reps=1, threads=1)
    result = bench_update.compare(args)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    config = result["library"]["configuration"]
    assert config == {
        "fsdp": False,
        "activation_checkpointing": False,
        "micro_batch_tokens": 8192,
        "attention": "segments",
    }
    assert "activation_checkpointing=False" in line and "attention=segments" in line
    assert "matrix_fraction=unknown" in line
    assert result["matrix_fraction"] is None and result["library"]["update_tflop"] > 0
