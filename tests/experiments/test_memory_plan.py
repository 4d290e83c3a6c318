"""experiments/memory_plan.py: the paper's models counted on the meta device; the shipped GPU configs fit 80 GB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

from experiments.memory_plan import GIB, _meta_model, activation_bytes, model_shape, plan  # noqa: E402


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(EXPERIMENTS / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_qwen_7b_is_counted_on_the_meta_device_from_the_config_in_the_repository() -> None:
    cfg = _cfg("model=qwen2.5-7b")
    model = _meta_model(cfg.model.policy, cfg.model.architecture)
    assert all(p.is_meta for p in model.parameters())
    shape = model_shape(model)
    assert shape.params == 7_615_616_512  # Qwen2.5-7B-Instruct's published count
    assert (shape.layers, shape.hidden, shape.intermediate, shape.kv_dim, shape.vocab) == (28, 3584, 18944, 512, 152064)


@pytest.mark.parametrize("backend", [None, "vllm"])  # vllm: issue 19's audit, the engines' share must fit too
@pytest.mark.parametrize("scale", ["gpu", "multinode"])
@pytest.mark.parametrize("setting", ["alfworld", "coding"])
def test_the_shipped_gpu_configs_fit_80_gb(scale: str, setting: str, backend: str | None) -> None:
    extra = [f"backend={backend}"] if backend else []
    p = plan(_cfg(f"+setting={setting}", f"scale={scale}", "model=qwen2.5-7b", *extra))
    assert p.capacity == 80 * GIB
    assert ("rollout.vllm_engines" in p.parts) is (backend == "vllm")
    assert p.fits, {k: round(v / GIB, 2) for k, v in p.parts.items()}
    # the sharded states are what the world size divides: fp32 weights + grads + Adam = 16 bytes per parameter
    world = 8 * (1 if scale == "gpu" else 4 if setting == "coding" else 8)
    states = sum(v for k, v in p.parts.items() if k.startswith(("policy.", "judge.")))
    assert states == pytest.approx(2 * 16 * 7_615_616_512 / world, rel=1e-6)


def test_what_the_plan_refuses_without_checkpointing_or_with_64_long_prompts_per_forward() -> None:
    base = ["+setting=alfworld", "scale=gpu", "model=qwen2.5-7b"]
    p = plan(_cfg(*base, "fsdp.activation_checkpointing=false"))
    assert p.training > 80 * GIB and not p.fits
    assert not plan(_cfg(*base, "model.batch_size=64")).fits  # the judge's 64 prompts of 5k tokens in one prefill
    shape = model_shape(
        _meta_model(_cfg("model=qwen2.5-7b").model.policy, "experiments/model_configs/qwen2.5-7b-instruct.json")
    )
    assert (
        activation_bytes(shape, tokens=8192, checkpointing=True)
        < activation_bytes(shape, tokens=8192, checkpointing=False) / 3
    )


def test_the_command_prints_the_plan_and_whether_it_fits(tmp_path: Path) -> None:
    out = (
        subprocess.run(
            [
                sys.executable,
                str(EXPERIMENTS / "memory_plan.py"),
                "scale=gpu",
                "model=qwen2.5-7b",
                f"hydra.run.dir={tmp_path}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
            cwd=tmp_path,
        )
        .stdout.strip()
        .splitlines()
    )
    assert out[-1].startswith("fits=true peak_gib=") and out[-1].endswith("capacity_gib=80.00")
    assert any(line.startswith("policy.optimizer") for line in out)
