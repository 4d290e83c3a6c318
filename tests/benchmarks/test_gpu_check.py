"""``python -m benchmarks.gpu_check``: end to end on the CPU (``--dry``), its refusals, and its stages on a GPU."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check

REPO = Path(__file__).resolve().parents[2]
NO_CUDA = "needs a CUDA device: python -m benchmarks.gpu_check on a GPU machine (docs/scaling.md)"


@pytest.mark.slow
def test_the_dry_run_goes_through_every_stage(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="2")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--dry", "--work", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    records = {r["stage"]: r for r in (json.loads(x) for x in lines if x.startswith('{"stage"'))}
    assert list(records) == list(gpu_check.STAGES)
    assert lines[-1].startswith("gpu_check ok=") and " failed=0 " in lines[-1]
    assert records["fsdp2"]["compute_dtype"] == "torch.bfloat16" and records["fsdp2"]["masters"] == ["torch.float32"]
    assert records["train"]["iterations"] == 2 and records["train"]["eval_files"]
    assert records["update"]["library_tokens_per_s"] > 0 and records["update"]["plain_tokens_per_s"] > 0
    if records["vllm"]["status"] == "skipped":
        assert "vllm" in records["vllm"]["reason"].lower()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal is for machines without")
def test_without_cuda_it_refuses_naming_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        gpu_check.main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "no CUDA device" in err and "--dry" in err


def test_an_unknown_stage_is_refused() -> None:
    args = argparse.Namespace(dry=True, stages="env,warp")
    with pytest.raises(ValueError, match="--stages: unknown stage 'warp'"):
        gpu_check.run_stages(args)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_fsdp2_packing_and_generation_on_the_gpu(tmp_path: Path) -> None:
    args = argparse.Namespace(dry=False, stages="env,fsdp2,packing,generation", work=str(tmp_path))
    records = gpu_check.run_stages(args)
    assert [r["status"] for r in records] == ["ok"] * 4, records
    fsdp2 = records[1]
    assert fsdp2["compute_dtype"] == "torch.bfloat16" and fsdp2["adamw_1e-6_changed_fraction"] > 0.9
    # a variable-length kernel, not the dense (T, T) mask, and its log-probs checked against the padded ones
    assert records[2]["attention"] != "dense" and "max_abs_err_varlen" in records[2]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_train_run_stays_within_the_memory_plan(tmp_path: Path) -> None:
    args = argparse.Namespace(dry=False, stages="train,memory_plan", work=str(tmp_path), train_timeout=400.0)
    records = gpu_check.run_stages(args)
    assert [r["status"] for r in records] == ["ok", "ok"], records
    assert records[1]["measured_over_plan"] <= 1.0
    assert len(records[0]["checkpoint_s"]) >= 1  # the blocking part of each save (written in the background)
