"""One rank of tests/lightning/test_loading.py: ``python _loading_worker.py RANK PORT MODEL_DIR OUT MODE``.

Rank 0 loads the tiny model from ``MODEL_DIR/full`` (config and weights); rank 1 gets ``MODEL_DIR/config_only`` (the
config, no weights file: reading weights there would fail). ``MODE`` ``fsdp``: ``shard_from_rank0`` over a gloo mesh,
then each rank writes the full state dict gathered from the shards; ``ddp``: ``materialize_from_rank0``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rlanything_core.testing.processes import die_with_parent  # noqa: E402

WORLD = 2


def main(rank: int, port: int, model_dir: Path, out: Path, mode: str) -> None:
    die_with_parent()
    torch.manual_seed(1000 + rank)  # rank 1's garbage differs from rank 0's weights
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD))
    from rlanything_core.lightning.loading import causal_lm_on_rank0, materialize_from_rank0, shard_from_rank0
    from rlanything_core.lightning.sharding import ShardingConfig

    source = model_dir / ("full" if rank == 0 else "config_only")
    model = causal_lm_on_rank0(str(source), dtype="float32")  # before the process group, as the builders run
    on_meta = [name for name, p in model.named_parameters() if p.is_meta]
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    device = torch.device("cpu")
    if mode == "fsdp":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (WORLD,))
        shard_from_rank0(model, mesh, ShardingConfig(param_dtype=torch.float32, activation_checkpointing=False), device)
        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    else:
        materialize_from_rank0(model, device)
        state = model.state_dict()
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    logits = model(torch.tensor([[1, 2, 3, 4]])).logits.detach()  # the sharded forward works on every rank
    torch.save({"state": {k: v.detach().clone() for k, v in state.items()}, "buffers": buffers, "logits": logits},
               out / f"{mode}_rank{rank}.pt")
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight  # one tensor, trained once
    (out / f"{mode}_rank{rank}.json").write_text(json.dumps({"on_meta_after_build": len(on_meta), "tied": tied}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5])
