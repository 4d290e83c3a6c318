"""The weights are read by global rank 0 only; the other ranks build on meta and receive them.

Two gloo processes: rank 0 loads a saved tiny model, rank 1 is given a folder with its ``config.json`` and no weights
file (so it cannot have read the weights) and builds on the meta device. After ``shard_from_rank0`` (FSDP2), both
ranks hold exactly the saved weights and buffers (rotary ``inv_freq``, which no state dict carries, included) and
compute the same logits; the same with DDP (``materialize_from_rank0``: whole models by broadcast, the tied embedding
and output head tied again). On main every rank loaded the full model, and later a meta-built DDP rank was refused.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch

from rlanything_core.lightning.loading import is_loading_rank, meta_causal_lm
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_loading_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("loading")
    tiny_causal_lm(seed=3).save_pretrained(base / "full")
    (base / "config_only").mkdir()
    shutil.copy(base / "full" / "config.json", base / "config_only" / "config.json")
    return base


def _run(model_dir: Path, out: Path, mode: str) -> list[dict[str, object]]:
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    env.pop("RANK", None)
    run_ranks([[sys.executable, str(WORKER), str(r), str(port), str(model_dir), str(out), mode] for r in range(2)],
              timeout=600, cwd=REPO, env=env)
    return [
        {**json.loads((out / f"{mode}_rank{r}.json").read_text()), **torch.load(out / f"{mode}_rank{r}.pt")}
        for r in range(2)
    ]


@pytest.mark.parametrize("mode", ["fsdp", "ddp"])
def test_rank1_builds_on_meta_and_receives_rank0s_weights(model_dir: Path, tmp_path: Path, mode: str) -> None:
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(model_dir / "full", dtype=torch.float32)
    expected = reference.state_dict()
    ranks = _run(model_dir, tmp_path, mode)
    assert ranks[0]["on_meta_after_build"] == 0 and ranks[1]["on_meta_after_build"] > 0  # nothing allocated on 1
    for r in ranks:
        state = r["state"]
        assert isinstance(state, dict) and state.keys() == expected.keys()
        for key, value in expected.items():
            assert torch.equal(state[key], value), key
        buffers = r["buffers"]
        assert isinstance(buffers, dict) and buffers
        for name, value in reference.named_buffers():
            assert torch.equal(buffers[name], value), name
        assert torch.allclose(r["logits"], ranks[0]["logits"])  # type: ignore[arg-type]
        assert r["tied"]  # the tiny model ties its output head to its embedding, on every rank


def test_meta_build_reads_only_the_config(model_dir: Path) -> None:
    model = meta_causal_lm(str(model_dir / "config_only"))
    assert all(p.is_meta for p in model.parameters())


@pytest.mark.parametrize(
    ("env", "loads"),
    [
        ({}, True),
        ({"RANK": "0", "LOCAL_RANK": "0"}, True),
        ({"RANK": "3", "LOCAL_RANK": "3"}, False),
        ({"LOCAL_RANK": "1", "NODE_RANK": "0"}, False),
        ({"LOCAL_RANK": "0", "NODE_RANK": "1"}, False),
        ({"SLURM_PROCID": "9", "SLURM_NTASKS": "16"}, False),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "16"}, True),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "LOCAL_RANK": "1"}, False),  # Lightning's launcher in sbatch
    ],
)
def test_loading_rank_from_the_launchers_variables(env: dict[str, str], loads: bool) -> None:
    assert is_loading_rank(env) is loads
