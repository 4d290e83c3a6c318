"""The training side of a run: Fabric (devices, strategy, precision, loggers), both models' updates, the loop."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from lightning.fabric import Fabric
from lightning.fabric.strategies import DDPStrategy
from lightning.pytorch.loggers import TensorBoardLogger
from omegaconf import DictConfig, OmegaConf

from rlanything_core.assembly.memory_plan import checkpoint_every
from rlanything_core.lightning import fabric_runtime
from rlanything_core.lightning.csv_logger import ResumableCSVLogger
from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.lightning.sharding import ShardingConfig
from rlanything_core.loop.protocol import Evaluator, IterationSource
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.training.update import ModelUpdate

__all__ = ["Run", "fsdp2_strategy", "make_fabric", "make_loop", "sharding"]


@dataclass
class Run:
    """The loop of a run and where it lives."""

    loop: RLAnythingLoop
    run_dir: Path

    @property
    def is_global_zero(self) -> bool:
        """Whether this process is global rank 0 (the one that prints and writes the run's files)."""
        return self.loop.runtime.rank == 0


def make_loop(
    cfg: DictConfig,
    run_dir: Path,
    source: IterationSource[Any],
    evaluator: Evaluator | None,
    policy: Any,
    judge: Any,
    judge_loss: Any,
    rollout_context: Any = None,
) -> Run:
    """The loop over ``source`` with both models' updates (``optim.*``), its checkpoints and its evaluations."""
    runtime = FabricRuntime(make_fabric(cfg, run_dir), rollout_context=rollout_context)
    o = cfg.optim

    def update(role: str, model: Any, loss: Any) -> ModelUpdate:  # optim.<role>_optimizer, _updates, _epochs, ...
        return ModelUpdate(
            role, model, loss, runtime, optimizer=instantiate(o[f"{role}_optimizer"]),
            updates=int(o[f"{role}_updates"]), epochs=int(o.get(f"{role}_epochs", 1)),
            warmup_steps=int(o.get(f"{role}_warmup_steps", 0)),
            micro_batch_tokens=int(o.micro_batch_tokens), max_grad_norm=float(o.max_grad_norm),
        )  # fmt: skip

    policy_update = update("policy", policy, instantiate(o.policy_loss))
    judge_update = update("judge", judge, judge_loss) if judge is not None and judge_loss is not None else None
    loop = RLAnythingLoop(
        source,
        runtime,
        policy_update,
        judge,
        judge_update,
        iterations=int(cfg.iterations),
        checkpoint_dir=run_dir / "checkpoints",
        # every N iterations (checkpoint.every_n_iterations, or chosen from the checkpoint's size); the last always
        checkpoint_every=checkpoint_every(cfg),
        resume=bool(cfg.resume),
        evaluator=evaluator,
        eval_every=int(cfg.eval.every),
        eval_at_start=bool(cfg.eval.at_start),
        # the judge's process accuracy between full evaluations: only where the judge learns (elsewhere it is fixed)
        judge_eval_every=int(cfg.eval.judge_every) if cfg.arm.train_judge else 0,
    )
    return Run(loop, run_dir)


def make_fabric(cfg: DictConfig, run_dir: Path) -> Fabric:
    """``trainer.*``: devices, strategy and precision; CSV (and TensorBoard where installed) logs in ``run_dir``."""
    # a rerun appends to logs/metrics.csv; a repeated iteration or evaluation replaces its rows (each once, in order)
    loggers: list[Any] = [
        ResumableCSVLogger(str(run_dir), name="logs", version="", replay_key="iteration", eval_key="eval/iteration")
    ]
    if importlib.util.find_spec("tensorboard") is not None or importlib.util.find_spec("tensorboardX") is not None:
        loggers.append(TensorBoardLogger(str(run_dir), name="tensorboard", version=""))
    t = cfg.trainer
    strategy: Any = str(t.strategy)
    cpu = str(t.accelerator) == "cpu"
    if strategy == "ddp" and cpu:
        strategy = DDPStrategy(process_group_backend="gloo")
    elif strategy == "fsdp2":
        strategy = fsdp2_strategy(cfg)
    return Fabric(
        accelerator=str(t.accelerator),
        devices=t.devices,
        num_nodes=int(t.num_nodes),
        strategy=strategy,
        precision=str(t.precision),  # type: ignore[arg-type]  # checked by the config schema
        loggers=loggers,
    )


def fsdp2_strategy(cfg: DictConfig) -> Any:
    """Fabric's ``ModelParallelStrategy`` over every rank (``fabric_runtime.fsdp2_strategy``).

    ``fsdp.*`` sharding, ``fsdp.sharded_checkpoint`` (every rank writes its shards) or full state dicts gathered to rank
    0 (one file).
    """
    t = cfg.trainer
    return fabric_runtime.fsdp2_strategy(
        sharding(cfg),
        world=int(t.devices) * int(t.num_nodes),
        sharded_checkpoint=bool(OmegaConf.select(cfg, "fsdp.sharded_checkpoint", default=False)),
        backend="gloo" if str(t.accelerator) == "cpu" else None,
    )


def sharding(cfg: DictConfig) -> Any:
    """The FSDP2 sharding of both models under ``trainer.strategy=fsdp2`` (``fsdp.*``), else ``None``."""
    if str(cfg.trainer.strategy) != "fsdp2":
        return None
    f = OmegaConf.select(cfg, "fsdp", default=None) or {}
    return ShardingConfig(
        param_dtype=getattr(torch, str(f.get("param_dtype", "bfloat16"))),
        reduce_dtype=getattr(torch, str(f.get("reduce_dtype", "float32"))),
        activation_checkpointing=bool(f.get("activation_checkpointing", True)),
    )
