"""FSDP2 sharding (rlanything_core.lightning.sharding) over gloo: two processes against an unsharded copy.

Defects of the sharded update, each shown on CPU: fp32 master weights from a bf16 model; gradients summed over ranks
(each rank's loss carries its share of the global mean); clipping by the whole model's norm, not the local shard's;
rollouts on gathered weights with different numbers of forwards per rank and no hang; collectives of the runtime on
its own device.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.lightning.sharding import decoder_layers, require_fsdp2
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.testing.processes import free_port, run_ranks

WORKER = Path(__file__).with_name("_sharding_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("fsdp2")
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run_ranks([[sys.executable, str(WORKER), str(r), str(port), str(out)] for r in range(2)], timeout=300, env=env)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def test_shards_store_fp32_masters_of_a_bf16_model(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["all_dtensors"] and r["master_dtypes"] == ["torch.float32"]
    # why: an AdamW step of ~lr on a bf16 weight of 0.02 rounds away (the bf16 ulp there is 1.2e-4)
    w = torch.tensor(0.02, dtype=torch.bfloat16)
    assert w + torch.tensor(1e-6, dtype=torch.bfloat16) == w
    assert torch.tensor(0.02) + 1e-6 != torch.tensor(0.02)


def test_each_decoder_layer_is_an_fsdp_unit_and_checkpointing_is_on_when_configured(
    ranks: list[dict[str, Any]],
) -> None:
    """The bare ``fsdp`` strategy used to make the whole model one unit, with no activation checkpointing."""
    for r in ranks:
        assert r["n_layers"] == 2 and r["units_are_the_layers_then_the_root"]  # one unit per layer, plus the root
        assert r["checkpointing"] == [True, True, True]  # the model's flag and each layer's
        assert r["checkpointing_when_not_configured"] == [False, False, False]


def test_gradients_are_summed_over_ranks_and_match_the_unsharded_model(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["grad_max_abs_err"] < 1e-5 * max(1.0, r["grad_scale"])


def test_clipping_uses_the_whole_models_norm(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["norm"] == pytest.approx(r["ref_norm"], rel=1e-5)
        assert r["norm"] > 1e-3  # the clip engaged
        assert r["clipped_max_abs_err"] < 1e-8


def test_gathered_weights_serve_different_numbers_of_forwards_per_rank(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["gathered_max_abs_err"] < 1e-5
        assert r["resharded"]


def test_gathered_works_before_the_first_forward_and_restores_resharding(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["after_forward_layers_sharded"] and r["after_forward_root_kept"]


def test_packed_gradients_under_fsdp2_match_the_unsharded_padded_ones(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["packed_grad_max_abs_err"] < 1e-5 * max(1.0, r["grad_scale"])


def test_a_torch_without_the_fsdp2_api_is_refused_naming_the_version() -> None:
    class OldFSDPModule:
        def unshard(self) -> None: ...

    old = types.SimpleNamespace(FSDPModule=OldFSDPModule, fully_shard=None)
    with pytest.raises(RuntimeError, match=r"FSDPModule\.reshard.*register_fsdp_forward_method.*torch>=2"):
        require_fsdp2(old)
    require_fsdp2()  # this torch has it


def test_the_engine_receives_full_correctly_named_tensors_after_an_update(ranks: list[dict[str, Any]]) -> None:
    r = ranks[0]
    assert r["pushed_names_match"] and r["pushed_full_shapes"] and r["pushed_plain_tensors"]
    assert r["pushed_max_abs_err"] < 1e-6
    assert ranks[0]["buckets"] == ranks[1]["buckets"] > 1  # in buckets, and every rank took part in every gather


class _OnDevice(FabricRuntime):
    """One CPU process that reports ``meta`` as its device (it stands for cuda:N) and two ranks."""

    @property
    def device(self) -> torch.device:
        return torch.device("meta")

    @property
    def world_size(self) -> int:
        return 2


def test_the_runtimes_collectives_use_its_device(monkeypatch: pytest.MonkeyPatch) -> None:
    # NCCL reduces CUDA tensors only: a count reduced on the CPU fails under any GPU strategy
    from _update_rows import cpu_runtime

    runtime = _OnDevice(cpu_runtime().fabric)
    seen: list[torch.device] = []
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda t, *a, **k: seen.append(t.device))
    try:
        runtime.all_reduce([1.0, 2.0])
    except NotImplementedError:  # reading a meta tensor back: the device is what this test checks
        pass
    assert seen == [torch.device("meta")]


def test_the_model_is_in_training_mode_during_the_updates_forwards(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model used to stay in eval() during updates, so gradient checkpointing (train mode only) was off.

    ``ModelUpdate`` must run its micro-batch forwards in train mode and leave the model in eval mode afterwards.
    """
    from rlanything_core.types import TokenRows, TrainingRows

    policy = tiny_causal_lm(64, hidden=16, layers=1, seed=0)
    from _update_rows import updates

    update, _ = updates(policy, policy_optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
    ids = torch.randint(1, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    attn = torch.ones_like(ids, dtype=torch.bool)
    resp = attn & (torch.arange(8) >= 4)
    rows = TrainingRows(
        rows=TokenRows(ids, attn, resp, torch.zeros(2, 3, dtype=torch.int64)),
        advantages=torch.tensor([1.0, -1.0]),
        group=torch.zeros(2, dtype=torch.int64),
    )
    modes: list[tuple[bool, bool]] = []  # (training, grad enabled) at each forward
    layer = decoder_layers(policy)[0]  # the logprob path may call the decoder, not the model's own forward
    layer.register_forward_pre_hook(lambda m, args: modes.append((m.training, torch.is_grad_enabled())))
    update(rows)
    update_forwards = [training for training, grad in modes if grad]
    assert update_forwards and all(update_forwards)  # every forward with grad (the update's) ran in train mode
    assert not policy.training  # back in eval mode for rollouts
