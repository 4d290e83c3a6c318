"""Models and their rollout backends from a config, and the run folder every setting starts from.

Load (and seed) the models, wrap them for sampling, and with vLLM the engines and the weight push between training and
rollouts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from peft import LoraConfig, get_peft_model
from transformers import AutoTokenizer

from rlanything_core import files
from rlanything_core.assembly.memory_plan import preflight
from rlanything_core.assembly.setting import backend_name
from rlanything_core.config import ConfigError
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import SamplingParams
from rlanything_core.generation.weight_sync import EngineCycle, push_weights
from rlanything_core.lightning.checkpoint import read_checkpoint
from rlanything_core.models.encoder_rows import share_frozen_bottom
from rlanything_core.training.logprobs import RowScorer

__all__ = [
    "RANK_VARIABLES",
    "agent_backend",
    "apply_lora",
    "is_writer_rank",
    "judge_max_new_tokens",
    "load_models",
    "policy_weights",
    "prepare",
    "rollout_backends",
    "rollout_context",
    "sampling",
]

RANK_VARIABLES = ("RANK", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK")


def is_writer_rank() -> bool:
    """Whether this process is global rank 0, from the launchers' variables.

    The run is built before the process group exists: torchrun's ``RANK``, SLURM's ``SLURM_PROCID`` (``srun`` sets no
    ``RANK``), Lightning's ``NODE_RANK``/``LOCAL_RANK`` (its spawned processes inherit ``SLURM_PROCID=0`` from a
    one-task allocation, so every variable present must be 0).
    """
    return all(int(os.environ.get(var, "0")) == 0 for var in RANK_VARIABLES)


def apply_lora(model: Any, lora: DictConfig) -> Any:
    """``model`` with PEFT LoRA adapters on ``lora.target_modules`` (rank ``lora.r``); its base weights frozen.

    With ``lora.activation_checkpointing`` the decoder layers are recomputed in the backward (non-reentrant, so the
    frozen embeddings need no gradient hook). The trainer then optimizes only the adapters (the only parameters that
    require a gradient), and the module's packed update drives the wrapped model like any causal LM.
    """
    config = LoraConfig(
        r=int(lora.r),
        lora_alpha=int(lora.alpha),
        lora_dropout=float(lora.dropout),
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
    )
    wrapped = get_peft_model(model, config)
    if bool(lora.get("activation_checkpointing", True)):
        wrapped.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return wrapped


def policy_weights(path: str) -> dict[str, Any]:
    """The policy's weights in ``path``: a saved state dict (a warm start), or a run's one-file checkpoint.

    From a checkpoint (``last.ckpt``) its ``policy.*`` entries, so that ``eval_only`` evaluates what a run trained.
    """
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state.get("state_dict"), dict) and "loop" in state:  # lightning/checkpoint.py's layout
        return {k[len("policy.") :]: v for k, v in state["state_dict"].items() if k.startswith("policy.")}
    return dict(state)


def load_models(cfg: DictConfig) -> tuple[Any, Any | None, Any]:
    """``(policy, judge or None, tokenizer)``; the judge shares the policy's tokenizer; LoRA-wrapped with ``lora``."""
    built = instantiate(cfg.model.policy)
    policy, tokenizer = built if isinstance(built, tuple) else (built, None)
    if tokenizer is None:
        tokenizer = AutoTokenizer.from_pretrained(str(cfg.model.tokenizer))
    policy_init = OmegaConf.select(cfg, "model.policy_init")
    if policy_init is not None:  # a supervised warm start (rlanything_core.ablation.warm_start), or a run's checkpoint
        policy.load_state_dict(policy_weights(str(policy_init)))
    judge = None
    if cfg.arm.use_judge:
        built = instantiate(cfg.model.judge)
        judge = built[0] if isinstance(built, tuple) else built
        if cfg.arm.judge_checkpoint is not None:
            state = read_checkpoint(str(cfg.arm.judge_checkpoint))["state_dict"]  # one file or sharded
            judge.load_state_dict({k[len("judge.") :]: v for k, v in state.items() if k.startswith("judge.")})
    if judge is not None and bool(OmegaConf.select(cfg, "model.share_frozen_bottom", default=True)):
        # after every load: sharing checks that the two frozen bottoms are the same weights (else keeps two stores)
        share_frozen_bottom(policy, judge)
    lora = OmegaConf.select(cfg, "lora", default=None)
    if lora is not None and bool(lora.get("enabled", False)):
        policy = apply_lora(policy, lora)
        if judge is not None and bool(cfg.arm.train_judge):
            judge = apply_lora(judge, lora)
    return policy, judge, tokenizer


def prepare(cfg: DictConfig) -> tuple[Path, Any, Any, Any, int]:
    """Run folder (with the resolved config), seeded models, tokenizer and pad id."""
    preflight(cfg)  # before anything is built or written: LoRA under FSDP2, FSDP2's API, a plan that does not fit
    run_dir = Path(str(cfg.run_dir)).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    if is_writer_rank():  # one writer, atomically: the other ranks would race on the same file (called through the
        # module, where a test records the write)
        files.atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    threads = OmegaConf.select(cfg, "torch_threads")
    if threads is not None:
        torch.set_num_threads(int(threads))
    torch.manual_seed(int(cfg.seed))
    policy, judge, tokenizer = load_models(cfg)
    pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    return run_dir, policy, judge, tokenizer, pad_id


def sampling(cfg: DictConfig, *, max_new_tokens: int, temperature: float) -> Any:
    """``SamplingParams`` with the model's nucleus mass (``model.top_p``, 1.0 when the model config has none)."""
    top_p = float(OmegaConf.select(cfg, "model.top_p", default=1.0))
    return SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p)


def judge_max_new_tokens(cfg: DictConfig) -> int:
    """The judge's generation budget (votes, unit tests): ``model.judge_max_new_tokens``, else the policy's."""
    return int(OmegaConf.select(cfg, "model.judge_max_new_tokens", default=cfg.model.max_new_tokens))


def agent_backend(cfg: DictConfig, model: Any, tokenizer: Any) -> Any:
    """What the selector / vote sampler calls: an encoder scorer is its own backend; a causal LM gets transformers'."""
    if isinstance(model, RowScorer):
        return model
    return TransformersBackend(model, tokenizer, batch_size=int(cfg.model.batch_size))


def rollout_backends(cfg: DictConfig, policy: Any, judge: Any, tokenizer: Any) -> tuple[Any, Any]:
    """``(policy backend, judge backend or None)`` as ``backend.name`` says.

    The trained modules themselves (transformers, the default) or vLLM engines built from the models' folders
    (``backend=vllm``).
    """
    name = backend_name(cfg)
    if name == "transformers":
        return (
            agent_backend(cfg, policy, tokenizer),
            agent_backend(cfg, judge, tokenizer) if judge is not None else None,
        )
    if name != "vllm":
        raise ConfigError("backend.name", f"unknown backend {name!r}", "use backend=vllm, or no backend")
    if cfg.model.action_selection != "boxed" or (judge is not None and cfg.model.judge_votes != "generative"):
        raise ConfigError(
            "backend", "vLLM generates text; it does not score candidates", "use model=qwen2.5-7b (boxed, generative)"
        )
    engine = instantiate(cfg.backend.engine)

    def folder(role: str) -> str:
        path = OmegaConf.select(cfg, f"model.{role}.pretrained_model_name_or_path")
        if path is None:
            raise ConfigError(f"model.{role}", "vLLM loads a model folder", "use a model with a folder (qwen2.5-7b)")
        return str(path)

    return engine(model=folder("policy")), engine(model=folder("judge")) if judge is not None else None


def rollout_context(cfg: DictConfig, models: list[tuple[Any, Any]]) -> Any:
    """With vLLM, the module's rollout context; with transformers ``None`` (the module gathers its weights itself).

    The context wakes the engines, pushes the trained weights of each ``(model, engine)`` pair (full tensors, in
    buckets of ``backend.weight_bucket_mb``) and sleeps after.
    """
    if backend_name(cfg) != "vllm":
        return None
    bucket = int(float(cfg.backend.weight_bucket_mb) * 2**20)
    dtype = getattr(torch, str(cfg.backend.engine.dtype))
    pairs = [(m, e) for m, e in models if m is not None and e is not None]

    def sync() -> None:
        for model, engine in pairs:
            push_weights(model, engine, bucket_bytes=bucket, dtype=dtype)

    return EngineCycle([e for _, e in pairs], sync=sync).awake
