"""The GPU check's throughput stages (``benchmarks.gpu_check``), and what every stage shares.

- ``update``: ``benchmarks.bench_update``: the library's update against a plain transformers loop on the same tokens
  (tokens/s, ratio, peak memory);
- ``generation``: the transformers backend (``TransformersBackend``) against a plain ``model.generate`` on the same
  prompts (generated tokens/s);
- ``vllm``: the vLLM backend's decode tokens/s next to the transformers backend's, when vLLM is importable (skipped
  otherwise, with the reason).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks import bench_update

__all__ = ["Skipped", "stage_generation", "stage_update", "stage_vllm"]

REPO = Path(__file__).resolve().parents[1]


class Skipped(Exception):
    """A stage that cannot run here (its reason is reported)."""


def _device(args: argparse.Namespace) -> torch.device:
    return torch.device("cpu") if args.dry else torch.device("cuda", 0)


def _small_model(args: argparse.Namespace, device: torch.device, seed: int = 0) -> Any:
    return bench_update.build_model("small" if args.dry else "qwen2.5-0.5b", device=device, seed=seed)


def stage_update(args: argparse.Namespace) -> dict[str, Any]:
    """``benchmarks.bench_update`` at the Qwen2.5-1.5B shape (48 rows of 512-2048 tokens), as trained.

    Sharding, activation checkpointing and the micro-batch budget are ``train.py``'s at the device's scale
    (``bench_update.training_configuration``: FSDP2 with checkpointing on a GPU); the record names them, the
    attention backend, and the fraction of the device's matrix rate reached where its peak is known.
    """
    if args.dry:
        options = dict(device="cpu", shape="small", rows=4, min_len=16, max_len=64, reps=1, fsdp=False)
    else:
        options = dict(device="cuda", shape="qwen2.5-1.5b", rows=48, min_len=512, max_len=2048, reps=2)
    result = bench_update.compare(bench_update.arguments(**options))
    return {k: result[k] for k in ("shape", "rows", "ratio", "peak_ratio", "matrix_fraction")} | {
        "library_tokens_per_s": result["library"]["tokens_per_s"],
        "plain_tokens_per_s": result["plain"]["tokens_per_s"],
        "library_peak_mib": result["library"]["peak_over_start_mib"],
        "plain_peak_mib": result["plain"]["peak_over_start_mib"],
        "configuration": result["library"]["configuration"],
        "device_name": result["library"]["device_name"],
    }


def _prompts(args: argparse.Namespace) -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    n, length = (4, 16) if args.dry else (32, 256)
    return [torch.randint(300, 30000, (length,), generator=g).tolist() for _ in range(n)]


def stage_generation(args: argparse.Namespace) -> dict[str, Any]:
    """The transformers backend against a plain ``model.generate`` on the same prompts (generated tokens/s)."""
    from rlanything_core.generation.transformers_backend import TransformersBackend
    from rlanything_core.models.tiny import tiny_chat_tokenizer

    device = _device(args)
    dtype = torch.float32 if args.dry else torch.bfloat16
    model = _small_model(args, device).to(dtype).eval()
    model.config.use_cache = True
    new = 8 if args.dry else 128
    prompts = _prompts(args)
    backend = TransformersBackend(model, tiny_chat_tokenizer(), batch_size=len(prompts), stop_token_ids=[0])
    library_tps = _timed_generation(backend, prompts, new, device)
    ids = torch.tensor(prompts, device=device)
    with torch.no_grad():
        model.generate(ids[:2], max_new_tokens=2, do_sample=True, pad_token_id=0)
        bench_update._sync(device)
        started = time.perf_counter()
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                             do_sample=True, pad_token_id=0)  # fmt: skip
        bench_update._sync(device)
    plain_tps = out.shape[0] * (out.shape[1] - ids.shape[1]) / (time.perf_counter() - started)
    return {"prompts": len(prompts), "new_tokens": new, "library_tokens_per_s": round(library_tps, 1),
            "plain_tokens_per_s": round(plain_tps, 1), "ratio": round(library_tps / plain_tps, 3),
            "library_decode_steps_per_s": round(library_tps / len(prompts), 2)}  # fmt: skip


def _timed_generation(backend: Any, prompts: list[list[int]], new: int, device: torch.device) -> float:
    """Generated tokens/s of ``backend`` on ``prompts`` (``new`` tokens each, EOS ignored), after a warm-up."""
    from rlanything_core.generation.types import SamplingParams

    backend.generate(prompts[:2], SamplingParams(max_new_tokens=2))
    bench_update._sync(device)
    started = time.perf_counter()
    generations = backend.generate(prompts, SamplingParams(max_new_tokens=new, temperature=1.0, ignore_eos=True))
    bench_update._sync(device)
    return sum(len(g.token_ids) for g in generations) / (time.perf_counter() - started)


def stage_vllm(args: argparse.Namespace) -> dict[str, Any]:
    """Decode tokens/s of vLLM next to the transformers backend's, on the same saved model and prompts.

    The model is the 0.5B shape with the file-free tokenizer's vocabulary (259 ids), so that every id either engine
    samples decodes (vLLM's detokenizer has no id outside its tokenizer to skip, unlike transformers').
    """
    if importlib.util.find_spec("vllm") is None:
        raise Skipped("vllm is not importable here (GPUs: pip install -e '.[gpu]'; docs/scaling.md)")
    if args.dry:
        raise Skipped("--dry: vLLM's decode throughput is measured on a GPU only")
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlanything_core.generation.transformers_backend import TransformersBackend
    from rlanything_core.generation.vllm_backend import VLLMBackend
    from rlanything_core.models.tiny import tiny_chat_tokenizer

    device = _device(args)
    tokenizer = tiny_chat_tokenizer()
    values = json.loads((REPO / bench_update.SHAPES["qwen2.5-0.5b"]).read_text())
    values.update(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                  bos_token_id=tokenizer.bos_token_id, max_position_embeddings=2048)  # fmt: skip
    values.pop("torch_dtype", None)
    folder = Path(args.work) / "vllm-model"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(values.pop("model_type"), **values))
    model.to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, len(tokenizer) - 3, (256,), generator=g).tolist() for _ in range(32)]
    new = 128
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    hf = hf.to(device).eval()  # type: ignore[arg-type]  # transformers types .to() as a generic wrapper
    transformers_tps = _timed_generation(TransformersBackend(hf, tokenizer, batch_size=32), prompts, new, device)
    del hf, model
    torch.cuda.empty_cache()
    engine = VLLMBackend(folder, dtype="bfloat16", max_model_len=1024, enforce_eager=False,
                         gpu_memory_utilization=0.4)  # fmt: skip
    vllm_tps = _timed_generation(engine, prompts, new, device)
    return {"prompts": len(prompts), "new_tokens": new, "vllm_tokens_per_s": round(vllm_tps, 1),
            "transformers_tokens_per_s": round(transformers_tps, 1), "ratio": round(vllm_tps / transformers_tps, 3),
            "vllm_decode_steps_per_s": round(vllm_tps / len(prompts), 2)}  # fmt: skip
