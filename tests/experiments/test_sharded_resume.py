"""FSDP2 with sharded checkpoints (torch.distributed.checkpoint, every rank its own shards) resumes exactly.

Two gloo processes under Fabric's ``ModelParallelStrategy(save_distributed_checkpoint=True)``: a run killed
(SIGKILL, the whole process group) after its first iteration's checkpoint and rerun with the same command ends with
the weights *and* both optimizers' states of the uninterrupted run, bit for bit (checkpoints used to be full
state dicts gathered to rank 0, ~170 GB of host memory for the paper's 7B policy + judge with Adam states).
"""

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from _runs import REPO, env, run, train_cmd

from rlanything_core.lightning.checkpoint import SHARDS, read_checkpoint
from rlanything_core.testing.processes import reaped

# heavy: single-process exact resume (test_train_cli) and FSDP2 matching one process (test_distributed) run under CI
pytestmark = [pytest.mark.slow, pytest.mark.heavy]

SHARDED = [
    "iterations=2",
    "arm=policy_judge",
    "trainer.devices=2",
    "trainer.strategy=fsdp2",
    "++fsdp.param_dtype=float32",
    "++fsdp.sharded_checkpoint=true",
    # a learning-rate warmup still ramping when the run is killed: its step count lives in the optimizers' parameter
    # groups, which the sharded checkpoint must carry like the Adam moments (compared below)
    "+optim.policy_warmup_steps=50",
    "+optim.judge_warmup_steps=50",
]


def _assert_identical(a: Any, b: Any, where: str) -> int:
    """Compare nested checkpoint structures exactly; return the number of tensors compared."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape, where
        assert torch.equal(a, b), f"{where} differs"
        return 1
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: keys differ"
        return sum(_assert_identical(a[k], b[k], f"{where}.{k}") for k in a)
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        return sum(_assert_identical(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    assert a == b, f"{where}: {a!r} != {b!r}"
    return 0


def _sharded(run_dir: Path) -> dict[str, Any]:
    last = run_dir / "checkpoints" / "last.ckpt"
    assert last.is_symlink() and last.resolve().parent.name == SHARDS, "expected a link to a sharded checkpoint"
    shards = sorted(p.name for p in last.resolve().glob("*.distcp"))
    assert shards == ["__0_0.distcp", "__1_0.distcp"], shards  # each rank wrote its own shards
    # superseded saves are removed: only the directory last.ckpt names is left
    assert [p.name for p in (run_dir / "checkpoints" / SHARDS).iterdir()] == [last.resolve().name]
    return read_checkpoint(last)


def test_a_killed_sharded_fsdp2_run_resumes_to_the_uninterrupted_weights_and_optimizer_states(tmp_path: Path) -> None:
    ref_dir = tmp_path / "uninterrupted"
    match = run(ref_dir, *SHARDED, timeout=900)  # a collective mismatch would hang: the timeout fails it
    assert int(match.group(1)) == 2 and int(match.group(2)) >= 1, "no policy update: the comparison proves nothing"
    reference = _sharded(ref_dir)

    run_dir = tmp_path / "killed"
    last = run_dir / "checkpoints" / "last.ckpt"
    with reaped(train_cmd(run_dir, *SHARDED), cwd=REPO, env=env(), stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + 900
        while not last.is_symlink():  # the first iteration's checkpoint is complete once the link exists
            assert proc.poll() is None, f"the run ended before its first checkpoint: {proc.stderr.read()[-3000:]}"
            assert time.monotonic() < deadline, "no checkpoint in 900 s"
            time.sleep(0.2)
        # leaving the block SIGKILLs both ranks (the whole process group), mid-way through the second iteration
    assert read_checkpoint(last)["loop"]["completed"] == 1, "the kill came after the run had finished"
    resumed = run(run_dir, *SHARDED, timeout=900)
    assert int(resumed.group(1)) == 2
    got = _sharded(run_dir)
    assert got["state_dict"].keys() == reference["state_dict"].keys()
    assert _assert_identical(reference["state_dict"], got["state_dict"], "state_dict") > 0
    for optimizer in ("optimizer_0", "optimizer_1"):  # policy, judge: Adam moments and step counts
        assert _assert_identical(reference[optimizer], got[optimizer], optimizer) > 0
        groups = got[optimizer]["param_groups"]
        assert all(0 < g["warmup_step"] < 50 for g in groups), f"{optimizer}: the warmup was not under way: {groups}"
    # the per-iteration metrics survive the restart (wall-clock timings aside)
    def untimed(checkpoint: dict[str, Any]) -> list[dict[str, float]]:
        return [{k: v for k, v in e.items() if "time/" not in k} for e in checkpoint["update_history"]]

    assert untimed(got) == untimed(reference)
