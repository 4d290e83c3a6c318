"""scripts/memory_plan.py: the paper's models counted on the meta device; the shipped GPU configs fit 80 GB."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from rlanything_core.conf import CONF_DIR

REPO = Path(__file__).resolve().parents[2]

from rlanything_core.assembly.memory_plan import GIB, _meta_model, activation_bytes, model_shape, plan  # noqa: E402


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_qwen_7b_is_counted_on_the_meta_device_from_the_config_in_the_repository() -> None:
    cfg = _cfg("model=qwen2.5-7b")
    model = _meta_model(cfg.model.policy, cfg.model.architecture)
    assert all(p.is_meta for p in model.parameters())
    shape = model_shape(model)
    assert shape.params == 7_615_616_512  # Qwen2.5-7B-Instruct's published count
    assert (shape.layers, shape.hidden, shape.intermediate, shape.kv_dim, shape.vocab) == (28, 3584, 18944, 512, 152064)


@pytest.mark.parametrize("backend", [None, "vllm"])  # vllm: the engines' share must fit too
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
        _meta_model(_cfg("model=qwen2.5-7b").model.policy, "model_configs/qwen2.5-7b-instruct.json")
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
                "-m",
                "scripts.memory_plan",
                "scale=gpu",
                "model=qwen2.5-7b",
                f"hydra.run.dir={tmp_path}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},  # scripts/ is a folder of the repository, not installed
        )
        .stdout.strip()
        .splitlines()
    )
    assert out[-1].startswith("fits=true peak_gib=") and out[-1].endswith("capacity_gib=80.00")
    assert any(line.startswith("policy.optimizer") for line in out)


# ------------------------------------------------------------------ scale=1gpu: plan, preflight, checkpoints
def test_one_gpu_fits_80_gb_for_the_1_5b_pair() -> None:
    p = plan(_cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-1.5b"))
    assert p.capacity == 80 * GIB and p.fits, {k: round(v / GIB, 2) for k, v in p.parts.items()}
    # one device holds every state: fp32 weights + grads + Adam = 16 bytes per parameter of both models
    params = model_shape(_meta_model(None, "model_configs/qwen2.5-1.5b-instruct.json")).params
    assert params == 1_543_714_304  # Qwen2.5-1.5B-Instruct's published count (tied embeddings)
    states = sum(v for k, v in p.parts.items() if k.startswith(("policy.", "judge.")))
    assert states == 2 * 16 * params


def test_one_gpu_fits_24_gb_for_the_0_5b_pair_with_lora_and_lora_is_what_makes_the_difference() -> None:
    base = ["+setting=alfworld", "scale=1gpu", "model=qwen2.5-0.5b", "memory.gpu_gib=24", "trainer.strategy=auto"]
    lora = plan(_cfg(*base, "lora.enabled=true"))
    assert lora.capacity == 24 * GIB and lora.fits, {k: round(v / GIB, 2) for k, v in lora.parts.items()}
    assert lora.parts["policy.weights"] == 2 * 494_032_768  # frozen bf16 base (Qwen2.5-0.5B: 494M parameters)
    assert 0 < lora.parts["policy.lora"] < lora.parts["policy.weights"] / 5  # 8.8M adapter parameters, 16 B each
    assert not plan(_cfg(*base, "model=qwen2.5-1.5b", "lora.enabled=false")).fits  # full fine-tuning needs more


def test_the_packed_head_plans_one_chunk_not_every_token() -> None:
    shape = model_shape(_meta_model(None, "model_configs/qwen2.5-1.5b-instruct.json"))
    padded = activation_bytes(shape, tokens=8192, checkpointing=True)
    packed = activation_bytes(shape, tokens=8192, checkpointing=True, head_tokens=1024, packed=True)
    assert packed == padded - 7 * 1024 * shape.vocab * 10 + 8192 * 8192  # 7 of 8 chunks' logits saved, mask added


def test_preflight_refuses_before_anything_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlanything_core.assembly.memory_plan import preflight
    from rlanything_core.config import ConfigError
    from rlanything_core.lightning import sharding

    with pytest.raises(ConfigError, match=r"'memory.gpu_gib': the memory plan needs .* GiB per GPU.*lora.enabled=true"):
        preflight(_cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-7b"))  # a 7B pair on one 80 GB GPU
    with pytest.raises(ConfigError, match=r"'lora.enabled': LoRA is not supported under trainer.strategy=fsdp2"):
        preflight(_cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-0.5b", "lora.enabled=true"))
    lora_vllm = ["lora.enabled=true", "trainer.strategy=auto", "backend=vllm"]
    with pytest.raises(ConfigError, match=r"'lora.enabled': the vLLM engines receive full weights"):
        preflight(_cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-0.5b", *lora_vllm))
    monkeypatch.setattr(sharding, "_fsdp", lambda: type("OldFsdp", (), {"FSDPModule": object}))
    with pytest.raises(ConfigError, match=r"'trainer.strategy': .*lacks FSDP2's FSDPModule.unshard.*torch>=2"):
        preflight(_cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-0.5b"))
    preflight(_cfg("+setting=alfworld", "scale=cpu"))  # the CPU default passes (no plan, no FSDP2)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_a_gpu_scale_without_cuda_is_refused_naming_the_key() -> None:
    from rlanything_core.assembly.checks import validate
    from rlanything_core.config import ConfigError

    with pytest.raises(ConfigError, match=r"'trainer.accelerator': a GPU scale was chosen but this machine has no"):
        validate(_cfg("+setting=textworld", "scale=1gpu", "model=qwen2.5-0.5b"))


def test_checkpoint_interval_explicit_chosen_from_the_plan_or_every_iteration_on_cpu() -> None:
    from rlanything_core.assembly.memory_plan import checkpoint_every

    assert checkpoint_every(_cfg("+setting=alfworld", "scale=cpu")) == 1
    one_gpu = _cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-1.5b")
    assert plan(one_gpu).checkpoint == 2 * 12 * 1_543_714_304  # fp32 weights + Adam moments of both (no gradients)
    assert checkpoint_every(one_gpu) == 5  # 34.5 GiB a save: every ceil(34.5 / 8) iterations
    assert checkpoint_every(_cfg("+setting=alfworld", "scale=gpu", "model=qwen2.5-7b")) == 10  # capped
    explicit = _cfg("+setting=alfworld", "scale=1gpu", "model=qwen2.5-1.5b", "+checkpoint.every_n_iterations=3")
    assert checkpoint_every(explicit) == 3
    with pytest.raises(ValueError, match="checkpoint.every_n_iterations: expected an integer >= 1"):
        checkpoint_every(_cfg("+setting=alfworld", "scale=1gpu", "checkpoint.every_n_iterations=0"))


def test_one_gpu_with_vllm_needs_a_smaller_engine_share_for_the_1_5b_pair() -> None:
    base = ["+setting=alfworld", "scale=1gpu", "model=qwen2.5-1.5b", "backend=vllm"]
    assert not plan(_cfg(*base)).fits  # two engines at 0.2 of the GPU beside 46 GiB of training states
    assert plan(_cfg(*base, "backend.engine.gpu_memory_utilization=0.15")).fits  # docs/scaling.md says so
