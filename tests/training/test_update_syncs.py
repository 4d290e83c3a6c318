"""The update reads its metrics from the device once, not once per micro-batch and metric."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from lightning.fabric import Fabric

from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.update import ModelUpdate, to_device
from rlanything_core.types import TokenRows, TrainingRows


def _rows(n: int = 8, length: int = 24) -> TrainingRows:
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(length // 2, length + 1, (n,), generator=gen)
    positions = torch.arange(length)
    attention = positions < lengths[:, None]
    ids = torch.randint(1, 64, (n, length), generator=gen)
    rows = TokenRows(ids, attention, attention & (positions >= 3), torch.zeros(n, 3).long())
    return TrainingRows(rows, torch.randn(n, generator=gen), torch.zeros(n, dtype=torch.long))


def _metric_reads(micro_batch_tokens: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict[str, float]]:
    """Scalar reads (``float()``, ``.item()``) of tensors during one update, and its metrics."""
    update = ModelUpdate(
        "policy", tiny_causal_lm(64, hidden=16, layers=2, seed=0), PolicyLoss(),
        FabricRuntime(Fabric(accelerator="cpu", devices=1)), micro_batch_tokens=micro_batch_tokens,
    )  # fmt: skip
    update.setup()
    rows = _rows()
    reads = [0]
    real_float, real_item = torch.Tensor.__float__, torch.Tensor.item

    def counted_float(self: torch.Tensor) -> float:
        reads[0] += 1
        return real_float(self)

    def counted_item(self: torch.Tensor) -> Any:
        reads[0] += 1
        return real_item(self)

    with monkeypatch.context() as patch:
        patch.setattr(torch.Tensor, "__float__", counted_float)
        patch.setattr(torch.Tensor, "item", counted_item)
        metrics = update(rows)
    return reads[0], metrics


def test_metric_reads_do_not_grow_with_the_micro_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    one_micro, metrics_one = _metric_reads(10_000, monkeypatch)
    many_micros, metrics_many = _metric_reads(30, monkeypatch)  # 8 rows of 12-24 tokens: about one row each
    assert metrics_one["policy/updates"] == metrics_many["policy/updates"] == 1.0
    assert "policy/loss" in metrics_many and all(v == v for v in metrics_many.values())  # read, and not NaN
    assert many_micros == one_micro


def test_host_copies_keep_values_and_land_on_the_device() -> None:
    host = torch.arange(6).reshape(2, 3)
    moved = to_device(host, torch.device("cpu"))
    assert torch.equal(moved, host)
    assert to_device(host, torch.device("meta")).is_meta
