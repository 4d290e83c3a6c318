"""Models read from disk once, by global rank 0: every other rank builds them on the meta device and receives them.

Every rank loading a 7B policy and a 7B judge in bf16 holds ~30 GB of host RAM per process (eight per node: 240 GB)
and reads the files eight times per node. As torchtitan and verl do, only global rank 0 reads the weights; the other
ranks build the same architecture on the ``meta`` device from its ``config.json`` (no storage at all):

    build time (each process):  causal_lm_on_rank0(path) -> rank 0: from_pretrained(path); others: meta model
    runtime.setup_models (every rank, process group up; fabric_runtime.py):
        shard_from_rank0(model, mesh, config)  -> FSDP2 shards (``shard_model``); ranks on meta allocate theirs
                                                  (``to_empty``); rank 0's full state dict is broadcast into the
                                                  shards (``set_model_state_dict(broadcast_from_rank0=True)``), then
                                                  every buffer (non-persistent ones too: rotary ``inv_freq``)
        materialize_from_rank0(model, device) -> unsharded (DDP): ranks on meta allocate (``to_empty``), tie
                                                  their tied weights again, and receive every tensor by broadcast

Which process reads is decided before the process group exists, from the launcher's variables (``is_loading_rank``);
a wrong guess costs memory, never correctness (rank 0's weights overwrite every rank's), except that global rank 0
itself on meta is an error, raised on every rank.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from rlanything_core.lightning.sharding import ShardingConfig, shard_model

__all__ = [
    "any_rank_on_meta",
    "causal_lm_on_rank0",
    "is_loading_rank",
    "is_on_meta",
    "materialize_from_rank0",
    "meta_causal_lm",
    "shard_from_rank0",
]


def is_loading_rank(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is global rank 0, from the launcher's variables (before any process group exists).

    ``RANK`` (torchrun, Lightning's launcher children), else a non-zero ``LOCAL_RANK``, else ``SLURM_PROCID`` of an
    ``srun`` with several tasks, else ``NODE_RANK``; a process with none of them is rank 0 (one process, or the
    parent of Lightning's launcher).
    """
    env = os.environ if env is None else env
    if "RANK" in env:
        return int(env["RANK"]) == 0
    if int(env.get("LOCAL_RANK", "0")) != 0:
        return False
    if int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in env:
        return int(env["SLURM_PROCID"]) == 0
    return int(env.get("NODE_RANK", "0")) == 0


def meta_causal_lm(pretrained_model_name_or_path: str, *, dtype: Any = None, **kwargs: Any) -> nn.Module:
    """The architecture of ``pretrained_model_name_or_path`` on the meta device: reads its ``config.json`` only."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(pretrained_model_name_or_path, **kwargs)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config, dtype=_dtype(dtype))  # type: ignore[no-any-return]


def causal_lm_on_rank0(pretrained_model_name_or_path: str, *, dtype: Any = None, **kwargs: Any) -> nn.Module:
    """``AutoModelForCausalLM.from_pretrained`` on global rank 0, ``meta_causal_lm`` on every other rank.

    A drop-in ``_target_`` for the model configs of multi-process runs; the runtime's ``setup_models`` then fills
    the other ranks (``shard_from_rank0`` / ``materialize_from_rank0``).
    """
    if not is_loading_rank():
        return meta_causal_lm(pretrained_model_name_or_path, dtype=dtype, **kwargs)
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(  # type: ignore[no-any-return]
        pretrained_model_name_or_path, dtype=_dtype(dtype), **kwargs
    )


def _dtype(dtype: Any) -> Any:
    return getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype


def is_on_meta(model: nn.Module) -> bool:
    """Whether any parameter or buffer of ``model`` is on the meta device."""
    return any(t.is_meta for t in (*model.parameters(), *model.buffers()))


def any_rank_on_meta(model: nn.Module, device: torch.device) -> bool:
    """Whether ``model`` is on meta on any rank (collective); raises on every rank if global rank 0 is on meta."""
    local = is_on_meta(model)
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        if local:
            raise ValueError("model: on the meta device in a single process; nothing can fill it")
        return False
    flags = torch.tensor([float(local), float(local and dist.get_rank() == 0)], device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    if flags[1] > 0:
        raise ValueError("model: global rank 0 built it on the meta device; rank 0 must load the weights")
    return bool(flags[0] > 0)


def _broadcast_buffers(model: nn.Module) -> None:
    for buffer in model.buffers():  # FSDP2 leaves buffers unsharded: plain tensors, the same on every rank
        dist.broadcast(buffer.data, src=0)


def shard_from_rank0(model: nn.Module, mesh: Any, config: ShardingConfig, device: torch.device) -> nn.Module:
    """``shard_model``, then ranks that built ``model`` on meta receive their shards of rank 0's weights. Collective.

    When no rank is on meta, this is ``shard_model``. Otherwise rank 0 keeps its full state dict (the tensors it
    loaded) while sharding, ranks on meta allocate their shards on ``device``, and
    ``set_model_state_dict(full_state_dict=True, broadcast_from_rank0=True)`` sends every tensor from rank 0, each
    rank keeping its shard; then the buffers are broadcast.
    """
    if not any_rank_on_meta(model, device):
        return shard_model(model, mesh, config)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    full = dict(model.state_dict()) if dist.get_rank() == 0 else {}
    shard_model(model, mesh, config)
    if is_on_meta(model):
        model.to_empty(device=device)
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(model, full, options=options)
    full.clear()
    _broadcast_buffers(model)
    return model


def materialize_from_rank0(model: nn.Module, device: torch.device) -> nn.Module:
    """Unsharded runs (DDP): ranks that built ``model`` on meta allocate it and receive rank 0's tensors. Collective.

    A no-op when no rank is on meta. Ranks on meta ``to_empty`` onto ``device``; that gives each tied parameter (a
    causal LM's embedding and output head) its own storage, so the model's ``tie_weights`` ties them again before
    anything is sent (otherwise the ranks would list different parameters, and the broadcasts below would pair
    different tensors or wait forever). Then every parameter and buffer (non-persistent ones too: rotary
    ``inv_freq``) is broadcast from rank 0 on ``device``, in ``named_parameters`` / ``named_buffers`` order, which is
    the same on every rank; the names are checked first so that a mismatch is an error, not a hang. (Lightning's DDP
    wrapper later broadcasts rank 0's states again; that one cannot fill a meta model, which has no storage.)
    """
    if not any_rank_on_meta(model, device):
        return model
    if is_on_meta(model):
        model.to_empty(device=device)
        tie = getattr(model, "tie_weights", None)
        if callable(tie):
            tie()
    else:
        model.to(device)  # the broadcast's tensors must be on the collective's device (NCCL: the GPU) on every rank
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, names)
    if any(other != names for other in every):
        raise ValueError("model: the ranks built different parameters or buffers; they cannot receive rank 0's")
    with torch.no_grad():
        for tensor in (*model.parameters(), *model.buffers()):
            dist.broadcast(tensor.data, src=0)
    return model
