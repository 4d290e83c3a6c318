"""One rank of tests/lightning/test_gradient_sync.py: uneven micro-batches per rank, hand sync vs DDP's hooks."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WORLD = 2
# Four rows of one task group split as the loop splits them: rank 0 holds rows 0-2 in two micro-batches, rank 1 row 3.
MICRO_BATCHES = {0: [[0, 1], [2]], 1: [[3]]}
ROWS = 4  # the global count every rank's loss is normalized by


def _rows() -> torch.Tensor:
    return torch.randn(ROWS, 4, generator=torch.Generator().manual_seed(1))


def _model() -> nn.Linear:
    torch.manual_seed(0)  # the same initial weights on every rank (DDP would broadcast rank 0's anyway)
    return nn.Linear(4, 1)


def _grads(model: nn.Module) -> list[float]:
    return [x for p in model.parameters() for x in p.grad.flatten().tolist()]  # type: ignore[union-attr]


def main(rank: int, port: int, out: Path, mode: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # 120 s: on a loaded machine one rank may import torch 20 s after the other (a 20 s rendezvous flaked once). The
    # DDP case's error does not wait for it: rank 1's exit closes its connections, and rank 0 fails at once.
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=120))
    x = _rows()
    reference = _model()
    (reference(x).sum() / ROWS).backward()  # every row in one process: the gradient both paths should give
    model = _model()
    result: dict[str, object] = {"rank": rank, "single_process_grad": _grads(reference)}
    if mode == "manual":  # what ``ModelUpdate`` does: hooks off, local accumulation, one all-reduce (sum) per step
        for micro in MICRO_BATCHES[rank]:
            (model(x[micro]).sum() / ROWS).backward()
        for p in model.parameters():
            assert p.grad is not None
            dist.all_reduce(p.grad)
        result["grad"] = _grads(model)
    else:  # DDP's hooks on: one bucketed all-reduce (mean) in every backward
        ddp = DistributedDataParallel(model)
        try:
            for micro in MICRO_BATCHES[rank]:
                (ddp(x[micro]).sum() / ROWS).backward()
                result.setdefault("grads_after_each_backward", []).append(_grads(model))  # type: ignore[union-attr]
            result["error"] = None
        except RuntimeError as err:  # a collective no other rank joins
            result["error"] = str(err)[:500]
    (out / f"{mode}_rank{rank}.json").write_text(json.dumps(result))
    # no barrier, no destroy: rank 1 must not join rank 0's extra all-reduce with a collective of its own
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])
