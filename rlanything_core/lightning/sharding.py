"""FSDP2 sharding of the policy and the judge: one ``fully_shard`` unit per decoder layer, fp32 masters, bf16 compute.

Used by ``fabric_runtime.parallelize_models`` under Fabric's ``ModelParallelStrategy`` (``trainer.strategy=fsdp2``);
the update (``training/update.py``) calls the sharded models directly (no forward redirection), two models with two
optimizers. What the paper's scale needs, and what each function here does:

- ``shard_model``: parameters stored in fp32 (``master_dtype``: an AdamW step of 1e-6 on a weight of 0.02 is 1/100 of
  a bf16 ulp, so bf16 storage rounds every update away), gathered in ``param_dtype`` (bf16) for compute, gradients
  reduce-scattered in ``reduce_dtype`` (fp32) as a *sum* (the losses are already normalized by global token counts);
  activation checkpointing of every decoder layer (transformers' own, so parameter names do not change).
- ``gathered``: every rank gathers the full weights once (one all-gather per unit, the same on every rank) and keeps
  them until the block ends, so rollouts and evaluation (different numbers of forwards on each rank) make no
  collective call. Only FSDP2's public API is used (``unshard``/``reshard``, ``set_reshard_after_forward``); a torch
  without it is refused by ``require_fsdp2`` before anything is sharded.
- ``clip_grad_norm``: the norm over the whole model (each rank holds a shard of each gradient: the local norm alone
  would clip each shard differently), then the same scale on every shard.
- ``padding_rows``: a zero-weight micro-batch, so that ranks with fewer (or no) rows run as many forward/backward
  passes, hence as many collectives, as the busiest rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

__all__ = [
    "ShardingConfig",
    "clip_grad_norm",
    "fsdp_units",
    "gathered",
    "is_sharded",
    "require_fsdp2",
    "shard_model",
]

# FSDP2's public API this module and training/packing.py use; torch 2.11 (on an H200) and 2.13 were run with it
FSDP2_METHODS = (
    "unshard",
    "reshard",
    "set_reshard_after_forward",
    "set_gradient_divide_factor",
    "set_force_sum_reduction_for_comms",
)
FSDP2_TORCH = "2.11"


@dataclass(frozen=True)
class ShardingConfig:
    """How ``shard_model`` shards a causal LM.

    Args:
        param_dtype: compute dtype of the gathered parameters (``torch.bfloat16`` on GPUs).
        reduce_dtype: dtype of the gradient reduce-scatter.
        master_dtype: dtype the sharded parameters (and so the optimizer states) are stored in.
        activation_checkpointing: recompute each decoder layer in the backward instead of keeping its activations.
    """

    param_dtype: torch.dtype = torch.bfloat16
    reduce_dtype: torch.dtype = torch.float32
    master_dtype: torch.dtype = torch.float32
    activation_checkpointing: bool = True


def _fsdp() -> Any:
    from torch.distributed import fsdp

    return fsdp


def require_fsdp2(fsdp: Any = None) -> None:
    """Raise unless this torch's FSDP2 has the public API sharding needs (``fsdp``: the module to check, for tests).

    Raises:
        RuntimeError: naming the missing methods, the torch found and the torch needed, and the fix.
    """
    try:
        fsdp = _fsdp() if fsdp is None else fsdp
    except ImportError as err:  # a torch built without distributed support
        raise RuntimeError(
            f"trainer.strategy=fsdp2: torch {torch.__version__} has no torch.distributed.fsdp; install "
            f"torch>={FSDP2_TORCH} (the project pins it in pyproject.toml) or set trainer.strategy=auto"
        ) from err
    unit = getattr(fsdp, "FSDPModule", None)
    missing = [f"FSDPModule.{m}" for m in FSDP2_METHODS if unit is None or not hasattr(unit, m)]
    missing += [f for f in ("fully_shard", "register_fsdp_forward_method") if not hasattr(fsdp, f)]
    if missing:
        raise RuntimeError(
            f"trainer.strategy=fsdp2: torch {torch.__version__} lacks FSDP2's {', '.join(missing)}; "
            f"install torch>={FSDP2_TORCH} (the project pins it in pyproject.toml) or set trainer.strategy=auto"
        )


def is_sharded(model: nn.Module) -> bool:
    """Whether ``model`` (or a submodule) is an FSDP2 unit."""
    fsdp_module = _fsdp().FSDPModule
    return any(isinstance(m, fsdp_module) for m in model.modules())


def fsdp_units(model: nn.Module) -> list[Any]:
    """Every FSDP2 unit of ``model``, in module order (the same order on every rank)."""
    fsdp_module = _fsdp().FSDPModule
    return [m for m in model.modules() if isinstance(m, fsdp_module)]


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The decoder layers of a transformers causal LM (``model.get_decoder().layers``)."""
    get_decoder = getattr(model, "get_decoder", None)
    layers = getattr(get_decoder(), "layers", None) if get_decoder is not None else None
    if layers is None:
        raise ValueError(f"model: expected a transformers causal LM with decoder layers, got {type(model).__name__}")
    return list(layers)


def shard_model(model: nn.Module, mesh: Any, config: ShardingConfig) -> nn.Module:
    """Shard ``model`` over ``mesh`` in place: each decoder layer a unit, the rest (embeddings, norm, head) the root.

    Layers are cast to ``master_dtype`` one at a time just before they are sharded, so a model loaded in bf16 never
    exists in full fp32 on one rank.

    Returns:
        ``model``, now an ``FSDPModule`` whose parameters are ``DTensor`` shards.
    """
    require_fsdp2()
    fsdp = _fsdp()
    if config.activation_checkpointing:
        enable = getattr(model, "gradient_checkpointing_enable", None)
        if enable is None:
            raise ValueError("activation_checkpointing: the model has no gradient_checkpointing_enable()")
        enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    policy = fsdp.MixedPrecisionPolicy(param_dtype=config.param_dtype, reduce_dtype=config.reduce_dtype)
    # explicit, so that ``gathered`` can restore exactly these: a layer frees its gathered weights after its forward
    # (gathered again for the backward), the root keeps its own (embeddings, head: needed first in the backward)
    for layer in decoder_layers(model):
        layer.to(config.master_dtype)
        fsdp.fully_shard(layer, mesh=mesh, mp_policy=policy, reshard_after_forward=True)
    model.to(config.master_dtype)
    fsdp.fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=False)
    for unit in fsdp_units(model):
        unit.set_gradient_divide_factor(1.0)  # a sum over ranks: each rank's loss carries its share of the mean
        unit.set_force_sum_reduction_for_comms(True)  # plain SUM (gloo has no PREMUL_SUM; NCCL: zero-copy)
    return model


@contextmanager
def gathered(*models: nn.Module | None) -> Iterator[None]:
    """Within the block, the sharded ``models`` hold their full (``param_dtype``) weights on every rank.

    Entering is collective (one all-gather per unit, in the same order everywhere); inside, forwards make no
    collective call, so ranks may run different numbers of them (rollouts, evaluation). Unsharded models pass through.
    On exit every unit is resharded and gets back ``shard_model``'s reshard-after-forward settings (public API only:
    ``set_reshard_after_forward``, ``unshard``, ``reshard``).
    """
    roots = [m for m in models if m is not None and is_sharded(m)]
    if roots:
        require_fsdp2()
    units = [u for m in roots for u in fsdp_units(m)]
    try:
        for root in roots:  # a forward must not reshard (that would all-gather again in the next one)
            root.set_reshard_after_forward(False)  # type: ignore[operator]
        for unit in units:
            unit.unshard()
        yield
    finally:
        for root in roots:
            root.set_reshard_after_forward(True)  # type: ignore[operator]  # every layer, as shard_model set it
            root.set_reshard_after_forward(False, recurse=False)  # type: ignore[operator]  # the root, likewise
        for unit in units:
            unit.reshard()


def clip_grad_norm(parameters: Iterable[nn.Parameter], max_norm: float) -> Tensor:
    """Scale the gradients so that their total 2-norm over the whole (possibly sharded) model is at most ``max_norm``.

    Args:
        parameters: the model's parameters (plain tensors or FSDP2 ``DTensor`` shards).
        max_norm: the largest allowed total norm (``> 0``).

    Returns:
        The total norm before clipping, a scalar tensor (the same on every rank).
    """
    if max_norm <= 0:
        raise ValueError(f"max_norm: expected > 0, got {max_norm}")
    params = [p for p in parameters if p.grad is not None]
    grads = [p.grad for p in params if p.grad is not None]
    total = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
    full_tensor = getattr(total, "full_tensor", None)
    if full_tensor is not None:  # a DTensor: the shards' partial norms, reduced over the mesh
        total = full_tensor()
    torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)
    return total
