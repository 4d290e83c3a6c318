"""Per-GPU memory plan of a training config (printed by `python -m scripts.memory_plan scale=gpu model=qwen2.5-7b`).

Builds the policy and the judge on the meta device from their configs (no weights, no hub: ``model.architecture`` names
a transformers config.json shipped in the package, e.g. rlanything_core/conf/model_configs/), counts their
parameters and prints, per GPU, the bytes of each part of the two phases of an iteration:

- training (FSDP2, parameters sharded over every rank): fp32 master weights, fp32 gradients, Adam's two fp32 moments,
  the all-gathered bf16 layers in flight, and the activations of one micro-batch of ``optim.micro_batch_tokens``
  tokens (with activation checkpointing: every layer's input plus one layer recomputed; without: every layer's saved
  tensors), plus the LM head's logits of one chunk of response positions (the update is packed:
  ``rlanything_core/training/packing.py``) and the packed micro-batch's block-causal attention mask;
- with ``lora.enabled`` (one process, no FSDP2): each model's frozen base weights in bf16, and fp32 weights,
  gradients and Adam moments of its LoRA adapters only;
- rollouts: the sharded training states stay resident; with the transformers backend both models' full bf16 weights
  (gathered once for the iteration), the KV cache for ``model.batch_size`` sequences and the prefill's transient MLP
  tensors; with ``backend=vllm`` each engine's ``gpu_memory_utilization`` share of the GPU (the modules stay sharded).

``preflight`` refuses a run whose plan
does not fit (and LoRA under FSDP2, and a torch without FSDP2's API) before any model is built; ``checkpoint_every``
chooses how often to checkpoint from the checkpoint's size. Estimates, not measurements: they count
the tensors the maths needs (bf16 compute, SDPA/flash attention without a sequence-squared term) and leave allocator
fragmentation and CUDA context (~1-3 GiB) to the margin (``memory.margin_gib``).
"""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM

from rlanything_core.assembly.setting import backend_name
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError
from rlanything_core.lightning.sharding import require_fsdp2
from rlanything_core.training.packing import DEFAULT_CHUNK_TOKENS

ARCHITECTURES = CONF_DIR
"""Where a relative ``model.architecture`` (``model_configs/<name>.json``, shipped in the package) is read from."""
GIB = 1024**3

__all__ = [
    "ModelShape",
    "MemoryPlan",
    "activation_bytes",
    "checkpoint_bytes",
    "checkpoint_every",
    "lora_params",
    "model_shape",
    "plan",
    "preflight",
    "rollout_bytes",
    "training_state_bytes",
]


@dataclass(frozen=True)
class ModelShape:
    """What the memory of a decoder-only LM depends on (counted on the meta device)."""

    params: int
    layers: int
    layer_params: int  # the largest decoder layer (one FSDP unit)
    hidden: int
    intermediate: int
    kv_dim: int  # key/value heads x head dim
    vocab: int


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU of each part, the two phases' totals, and whether the larger fits."""

    parts: dict[str, int]
    training: int
    rollout: int
    capacity: int
    checkpoint: int = 0  # bytes of one checkpoint (both models' weights and optimizer states, all ranks)

    @property
    def peak(self) -> int:
        """The larger phase."""
        return max(self.training, self.rollout)

    @property
    def fits(self) -> bool:
        """Whether the peak stays within the capacity."""
        return self.peak <= self.capacity


def _meta_model(node: DictConfig, architecture: Any) -> Any:
    """A model on the meta device: from ``architecture`` (a transformers config.json) or by instantiating ``node``."""
    with torch.device("meta"):
        if architecture is not None:
            path = Path(str(architecture))
            values = json.loads((path if path.is_absolute() else ARCHITECTURES / path).read_text())
            config = AutoConfig.for_model(values.pop("model_type"), **values)
            return AutoModelForCausalLM.from_config(config)
        built = instantiate(node)
        return built[0] if isinstance(built, tuple) else built


def model_shape(model: Any) -> ModelShape:
    """The shape of a transformers causal LM (``model.model.layers``, ``model.config``)."""
    c = model.config
    layers = model.get_decoder().layers
    heads = int(c.num_attention_heads)
    head_dim = int(getattr(c, "head_dim", None) or c.hidden_size // heads)
    return ModelShape(
        params=sum(p.numel() for p in model.parameters()),
        layers=len(layers),
        layer_params=max(sum(p.numel() for p in layer.parameters()) for layer in layers),
        hidden=int(c.hidden_size),
        intermediate=int(c.intermediate_size),
        kv_dim=int(getattr(c, "num_key_value_heads", None) or heads) * head_dim,
        vocab=int(c.vocab_size),
    )


def training_state_bytes(shape: ModelShape, *, shards: int, trained: bool) -> dict[str, int]:
    """Sharded fp32 master weights, and for a trained model fp32 gradients and Adam's two fp32 moments (bytes)."""
    per_param = {"weights": 4, "grads": 4 if trained else 0, "optimizer": 8 if trained else 0}
    return {k: -(-shape.params * v // shards) for k, v in per_param.items()}


def lora_params(model: Any, *, r: int, target_modules: list[str]) -> int:
    """Parameters of rank-``r`` LoRA adapters on ``model``'s linear layers named by ``target_modules`` (PEFT's)."""
    return sum(
        r * (m.in_features + m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in set(target_modules)
    )


def activation_bytes(
    shape: ModelShape,
    *,
    tokens: int,
    checkpointing: bool,
    compute_bytes: int = 2,
    head_tokens: int | None = None,
    packed: bool = False,
) -> int:
    """Activations kept for the backward of one micro-batch of ``tokens`` tokens (bytes).

    Per token and layer the backward keeps (bf16): the inputs of the two norms, of q/k/v, of o_proj and of the MLP's
    projections, the rotated q/k and v, the attention output (8 hidden-sized, 3 kv-sized), the gate, up, SiLU and
    product tensors (4 intermediate-sized), and the norms' fp32 statistics copies (2 hidden-sized fp32). With
    checkpointing only each layer's input is kept, and one layer is recomputed at a time. The LM head adds its logits
    (bf16), their fp32 log-softmax and its gradient for ``head_tokens`` positions (default every token: the padded
    path; packed, one chunk of response positions at a time). Packed, SDPA also takes a ``tokens x tokens`` bool mask.
    """
    per_token_layer = compute_bytes * (8 * shape.hidden + 3 * shape.kv_dim + 4 * shape.intermediate) + 8 * shape.hidden
    if checkpointing:
        layers = shape.layers * tokens * shape.hidden * compute_bytes + tokens * per_token_layer
    else:
        layers = shape.layers * tokens * per_token_layer
    head = (tokens if head_tokens is None else min(head_tokens, tokens)) * shape.vocab * (compute_bytes + 4 + 4)
    mask = tokens * tokens if packed else 0
    return layers + head + mask


def rollout_bytes(shape: ModelShape, *, sequences: int, prompt_tokens: int, new_tokens: int) -> dict[str, int]:
    """The transformers backend's generation: gathered bf16 weights, KV cache, prefill transients (bytes)."""
    kv_per_token = 2 * shape.layers * shape.kv_dim * 2
    prefill = sequences * prompt_tokens * (3 * shape.intermediate * 2 + 4 * shape.hidden * 2)
    return {
        "gathered_weights": shape.params * 2,
        "kv_cache": sequences * (prompt_tokens + new_tokens) * kv_per_token,
        "prefill_transient": prefill,
    }


def _lora(cfg: DictConfig) -> dict[str, Any] | None:
    """The ``lora`` block when ``lora.enabled``, else ``None``."""
    node = OmegaConf.select(cfg, "lora", default=None)
    if node is None or not bool(node.get("enabled", False)):
        return None
    return dict(OmegaConf.to_container(node, resolve=True))  # type: ignore[arg-type]


def plan(cfg: DictConfig) -> MemoryPlan:
    """The per-GPU memory plan of ``cfg`` (its trainer, optim, fsdp, lora, model and memory keys)."""
    shards = int(cfg.trainer.devices) * int(cfg.trainer.num_nodes)
    tokens = int(cfg.optim.micro_batch_tokens)
    lora = _lora(cfg)
    checkpointing = bool(OmegaConf.select(cfg, "fsdp.activation_checkpointing", default=False))
    if lora is not None:
        checkpointing = bool(lora.get("activation_checkpointing", True))
    mem = OmegaConf.select(cfg, "memory", default={}) or {}
    capacity = int(float(mem.get("gpu_gib", 80)) * GIB)
    margin = int(float(mem.get("margin_gib", 4)) * GIB)
    architecture = OmegaConf.select(cfg, "model.architecture")
    models = {"policy": _meta_model(cfg.model.policy, architecture)}
    if bool(OmegaConf.select(cfg, "arm.use_judge", default=True)):
        models["judge"] = _meta_model(cfg.model.judge, architecture)
    shapes = {name: model_shape(m) for name, m in models.items()}
    trains_judge = bool(OmegaConf.select(cfg, "arm.train_judge", default=True))
    parts: dict[str, int] = {}
    checkpoint = 0
    for name, shape in shapes.items():
        trained = name == "policy" or trains_judge
        if lora is None:
            states = training_state_bytes(shape, shards=shards, trained=trained)
            checkpoint += (states["weights"] + states["optimizer"]) * shards  # gradients are not saved
        else:  # frozen bf16 base weights, fp32 adapters with their gradients and Adam moments (one process)
            adapters = lora_params(models[name], r=int(lora["r"]), target_modules=list(lora["target_modules"]))
            states = {"weights": shape.params * 2, "lora": adapters * 16 if trained else 0}
            checkpoint += shape.params * 2 + (adapters * 12 if trained else 0)
        for key, value in states.items():
            parts[f"{name}.{key}"] = value
    states_total = sum(parts.values())
    largest = max(shapes.values(), key=lambda s: s.params)
    # FSDP2 keeps the current and the prefetched layer gathered (bf16) and one layer's fp32 gradient unsharded
    parts["train.gathered_layers"] = 0 if lora is not None else 2 * largest.layer_params * 2 + largest.layer_params * 4
    parts["train.activations"] = activation_bytes(
        largest, tokens=tokens, checkpointing=checkpointing, head_tokens=DEFAULT_CHUNK_TOKENS, packed=True
    )
    training = states_total + parts["train.gathered_layers"] + parts["train.activations"] + margin
    if backend_name(cfg) == "vllm":  # one engine per model in every process, each its share of the GPU
        share = float(cfg.backend.engine.gpu_memory_utilization) * len(shapes)
        parts["rollout.vllm_engines"] = int(share * capacity)
        rollout = states_total + parts["rollout.vllm_engines"] + margin
    else:  # both models gathered for the iteration's rollouts; one generates at a time
        gen = rollout_bytes(
            largest,
            sequences=int(cfg.model.batch_size),
            prompt_tokens=int(mem.get("prompt_tokens", 4096)),
            new_tokens=max(int(cfg.model.max_new_tokens), int(cfg.model.get("judge_max_new_tokens") or 0)),
        )
        # gathered bf16 copies under FSDP2; with LoRA the resident bf16 weights generate (nothing gathered)
        gen["gathered_weights"] = 0 if lora is not None else sum(s.params * 2 for s in shapes.values())
        parts.update({f"rollout.{k}": v for k, v in gen.items()})
        rollout = states_total + sum(gen.values()) + margin
    parts["margin"] = margin
    return MemoryPlan(parts=parts, training=training, rollout=rollout, capacity=capacity, checkpoint=checkpoint)


def _on_gpu(cfg: DictConfig) -> bool:
    return str(OmegaConf.select(cfg, "trainer.accelerator", default="cpu")) in ("gpu", "cuda")


def checkpoint_bytes(cfg: DictConfig) -> int:
    """Bytes one checkpoint of ``cfg``'s run writes (both models' weights and optimizer states, summed over ranks)."""
    return plan(cfg).checkpoint


# a checkpoint is written at roughly 1 GiB/s (measured on an H200: 12-17 s for the 0.5B pair's ~16 GB); one every
# ceil(GiB / 8) iterations keeps its amortized cost near 8 s an iteration, and at most 10 iterations are ever redone
CHECKPOINT_GIB_PER_ITERATION = 8
CHECKPOINT_MAX_EVERY = 10


def checkpoint_every(cfg: DictConfig) -> int:
    """How many iterations between checkpoints: ``checkpoint.every_n_iterations``, or chosen from the plan's size.

    Without a value (``null``), CPU runs checkpoint every iteration; GPU runs every ``ceil(GiB / 8)`` iterations,
    at most 10 (the last iteration is always checkpointed: ``RLAnythingLoop.checkpoint_due``).
    """
    every = OmegaConf.select(cfg, "checkpoint.every_n_iterations", default=None)
    if every is not None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"checkpoint.every_n_iterations: expected an integer >= 1 or null, got {every!r}")
        return every
    if not _on_gpu(cfg):
        return 1
    gib = checkpoint_bytes(cfg) / GIB
    return max(1, min(CHECKPOINT_MAX_EVERY, math.ceil(gib / CHECKPOINT_GIB_PER_ITERATION)))


def preflight(cfg: DictConfig) -> None:
    """Refuse, before any model is built, a GPU run that cannot work: each error names the key and the fix.

    LoRA under FSDP2 (not supported: ``shard_model`` stores every parameter as an fp32 master), with vLLM, or without
    PEFT; a torch without FSDP2's public API under ``trainer.strategy=fsdp2``; a GPU run whose memory plan exceeds
    ``memory.gpu_gib``.
    """
    strategy = str(OmegaConf.select(cfg, "trainer.strategy", default="auto"))
    if _lora(cfg) is not None:
        if strategy == "fsdp2":
            raise ConfigError(
                "lora.enabled",
                "LoRA is not supported under trainer.strategy=fsdp2 (FSDP2 would keep fp32 masters of the frozen base)",
                "set trainer.strategy=auto (one GPU: the frozen base in bf16 needs no sharding) or lora.enabled=false",
            )
        if backend_name(cfg) == "vllm":
            raise ConfigError(
                "lora.enabled",
                "the vLLM engines receive full weights by name, not PEFT's adapter-wrapped modules",
                "drop backend=vllm (the transformers backend generates with the LoRA-wrapped models) or set "
                "lora.enabled=false",
            )
        if importlib.util.find_spec("peft") is None:
            raise ConfigError("lora.enabled", "LoRA needs PEFT, which is not installed", "pip install -e '.[llm]'")
    if strategy == "fsdp2":
        try:
            require_fsdp2()
        except RuntimeError as err:
            fix = "install the pinned torch, or set trainer.strategy=auto"
            raise ConfigError("trainer.strategy", str(err), fix) from err
    if _on_gpu(cfg):
        p = plan(cfg)
        if not p.fits:
            raise ConfigError(
                "memory.gpu_gib",
                f"the memory plan needs {p.peak / GIB:.1f} GiB per GPU (training {p.training / GIB:.1f}, rollouts "
                f"{p.rollout / GIB:.1f}), more than {p.capacity / GIB:.0f} GiB",
                "a smaller model, lora.enabled=true with trainer.strategy=auto, a lower optim.micro_batch_tokens or "
                "model.batch_size, a lower backend.engine.gpu_memory_utilization with backend=vllm, more "
                "trainer.devices, or memory.gpu_gib if the GPU has more "
                "(python -m scripts.memory_plan <the same overrides> prints the plan)",
            )
