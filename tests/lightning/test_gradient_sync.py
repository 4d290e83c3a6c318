"""Why ``ModelUpdate`` all-reduces gradients itself instead of letting Lightning's DDP strategy do it.

Ranks hold whole task groups, so they hold different numbers of rows and run different numbers of micro-batch
backward passes (and a rank may run none for one model). DDP's gradient hooks run one bucketed all-reduce in every
backward and average over ranks; two gloo processes with 2 and 1 micro-batches show both failures: the busier rank's
second backward waits in an all-reduce no other rank joins (an error here, a hang on NCCL), and the first one
averages per-micro-batch gradients into a wrong sum. The module's path (hooks off, local accumulation of losses
normalized by the global counts, one summing all-reduce per optimizer step) matches the single-process gradient.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_ddp_worker.py")
REPO = Path(__file__).resolve().parents[2]


def _run(mode: str, out: Path) -> list[dict[str, Any]]:
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    commands = [[sys.executable, str(WORKER), str(r), str(port), str(out), mode] for r in range(2)]
    run_ranks(commands, timeout=120, env=env)
    return [json.loads((out / f"{mode}_rank{r}.json").read_text()) for r in range(2)]


def test_hand_sync_of_uneven_micro_batches_matches_one_process(tmp_path: Path) -> None:
    for rank in _run("manual", tmp_path):
        want = torch.tensor(rank["single_process_grad"])
        assert torch.allclose(torch.tensor(rank["grad"]), want, atol=1e-6)


def test_ddp_hooks_cannot_sync_uneven_micro_batches(tmp_path: Path) -> None:
    rank0, rank1 = _run("ddp", tmp_path)
    # the busier rank's second backward enters an all-reduce no other rank joins
    assert rank0["error"] is not None
    # and the one all-reduce that did happen averaged two different partial sums: not the full gradient
    want = torch.tensor(rank1["single_process_grad"])
    (only,) = rank1["grads_after_each_backward"]
    assert not torch.allclose(torch.tensor(only), want, atol=1e-6)


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
