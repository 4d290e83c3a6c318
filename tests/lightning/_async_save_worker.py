"""One process of tests/lightning/test_async_checkpoint.py: a sharded save written in the background, then read."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from lightning.fabric import Fabric
from torch import nn

from rlanything_core.lightning import checkpoint
from rlanything_core.lightning.fabric_runtime import fsdp2_strategy
from rlanything_core.lightning.sharding import ShardingConfig
from rlanything_core.models.tiny import tiny_causal_lm


def main(out_dir: str) -> None:
    out = Path(out_dir)
    torch.set_num_threads(1)
    config = ShardingConfig(param_dtype=torch.float32, activation_checkpointing=False)
    fabric = Fabric(accelerator="cpu", devices=1, strategy=fsdp2_strategy(config, world=1, sharded_checkpoint=True,
                                                                         backend="gloo"))  # fmt: skip
    fabric.launch()
    policy = tiny_causal_lm(300, hidden=32, layers=2, seed=1)
    models = fabric.setup_module(nn.ModuleDict({"policy": policy}))
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(models.parameters(), lr=1e-3))
    ids = torch.randint(1, 300, (2, 9), generator=torch.Generator().manual_seed(0))
    policy(input_ids=ids).logits.float().pow(2).mean().backward()
    optimizer.step()
    target = out / "last.ckpt"
    state = {"state_dict": models, "optimizer_0": optimizer, "loop": {"completed": 3}}
    checkpoint.atomic_save(fabric, target, state, asynchronous=False)  # the synchronous save, for comparison
    first = Path(target.resolve())
    state["loop"] = {"completed": 4}
    started = time.perf_counter()
    checkpoint.atomic_save(fabric, target, state, asynchronous=True)
    blocking = time.perf_counter() - started
    pending = len(checkpoint._PENDING)
    checkpoint.wait_for_saves()
    second = Path(target.resolve())
    whole = checkpoint.read_checkpoint(target)
    expected = {k: v.full_tensor() for k, v in models.state_dict().items()}
    fresh = fabric.setup_module(nn.ModuleDict({"policy": tiny_causal_lm(300, hidden=32, layers=2, seed=2)}))
    fresh_optimizer = fabric.setup_optimizers(torch.optim.AdamW(fresh.parameters(), lr=1e-3))
    rest = fabric.load(target, {"state_dict": fresh, "optimizer_0": fresh_optimizer})
    loaded = {k: v.full_tensor() for k, v in fresh.state_dict().items()}
    (out / "result.json").write_text(
        json.dumps(
            {
                "pending_after_save": pending,
                "blocking_s": blocking,
                "moved": first != second,
                "first_removed": not first.exists(),
                "loop": whole["loop"],
                "rest_loop": rest["loop"],
                "weights_equal": all(torch.equal(whole["state_dict"][k], expected[k]) for k in expected),
                "loaded_equal": all(torch.equal(loaded[k], expected[k]) for k in expected),
                "optimizer_keys": sorted(whole["optimizer_0"]["state"])[:2],
                "shard_dirs": sorted(p.name for p in (out / checkpoint.SHARDS).iterdir()),
            }
        )
    )
    # the run's last save, then the end of the run: the group torn down, no wait (the write finishes at exit)
    state["loop"] = {"completed": 5}
    checkpoint.atomic_save(fabric, target, state, asynchronous=True)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
