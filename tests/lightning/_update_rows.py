"""What the update tests share: ragged rows on the host, handed over as a source's ``rows`` stage does, and one
iteration of the real loop (``RLAnythingLoop``) on one CPU under Fabric."""

from __future__ import annotations

import dataclasses
import tempfile
from typing import Any

import torch
from lightning.fabric import Fabric
from torch import nn

from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.protocol import SINGLE_PROCESS, AdaptationPlan, Collectives, Outcomes, Rollouts
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.training.update import ModelUpdate
from rlanything_core.types import TokenRows, TrainingRows


def ragged_rows(n: int, length: int, *, seed: int = 0, shortest: int | None = None) -> TrainingRows:
    """``n`` right-padded rows of uneven length (``shortest`` to ``length``, default ``length // 2``) on the CPU,
    two task groups, a 3-token prompt then the response."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 2 if shortest is None else shortest, length + 1, (n,), generator=gen)
    ids = torch.randint(1, 64, (n, length), generator=gen)
    positions = torch.arange(length)
    attention = positions < lengths[:, None]
    response = attention & (positions >= 3)
    return TrainingRows(
        rows=TokenRows(ids, attention, response, torch.zeros(n, 3).long()),
        advantages=torch.randn(n, generator=gen),
        group=torch.arange(n) % 2,
    )


class FixedRows:
    """An ``IterationSource`` whose every iteration yields ``data``'s rows (no rollouts, no pool)."""

    collectives: Collectives = SINGLE_PROCESS
    pool: Any = None  # no task pool

    def __init__(self, data: IterationData) -> None:
        self.data = data

    def collect(self, iteration: int, /) -> Rollouts:
        return Rollouts(iteration, [self.data])  # one placeholder rollout: the loop asks for rows only where there are

    def judge(self, rollouts: Rollouts, /) -> Rollouts:
        return rollouts

    def rows(self, rollouts: Rollouts, /) -> IterationData:
        return dataclasses.replace(self.data, iteration=rollouts.iteration, metrics=dict(self.data.metrics))

    def outcomes(self, rollouts: Rollouts, /) -> Outcomes:
        return Outcomes(rollouts.iteration, {})

    def plan(self, outcomes: Outcomes, /) -> AdaptationPlan:
        return AdaptationPlan(outcomes.iteration, {}, [])

    def rewrite(self, plan: AdaptationPlan, /) -> list[Any]:
        return []

    def apply(self, plan: AdaptationPlan, candidates: list[Any], /) -> dict[str, float]:
        return {}

    def save_initial_pool(self) -> None:
        pass

    def restore_pool(self, completed: int, /) -> None:
        pass


def cpu_runtime() -> FabricRuntime:
    """One CPU process under Fabric."""
    return FabricRuntime(Fabric(accelerator="cpu", devices=1))


def updates(
    policy: nn.Module,
    judge: nn.Module | None = None,
    *,
    runtime: FabricRuntime | None = None,
    judge_loss: PolicyLoss | None = None,
    policy_optimizer: Any = None,
    judge_optimizer: Any = None,
    policy_updates: int = 1,
    judge_updates: int = 1,
    policy_epochs: int = 1,
    judge_epochs: int = 1,
    **shared: Any,
) -> tuple[ModelUpdate, ModelUpdate | None]:
    """The policy's update and (with ``judge_loss``) the judge's, as ``assembly/trainer.make_loop`` makes them."""
    runtime = runtime or cpu_runtime()
    extra = {} if policy_optimizer is None else {"optimizer": policy_optimizer}
    policy_update = ModelUpdate(
        "policy", policy, PolicyLoss(), runtime, updates=policy_updates, epochs=policy_epochs, **extra, **shared
    )
    if judge is None or judge_loss is None:
        return policy_update, None
    extra = {} if judge_optimizer is None else {"optimizer": judge_optimizer}
    judge_update = ModelUpdate(
        "judge", judge, judge_loss, runtime, updates=judge_updates, epochs=judge_epochs, **extra, **shared
    )
    return policy_update, judge_update


def fit_one_step(
    policy: ModelUpdate, data: IterationData, judge: ModelUpdate | None = None, judge_model: nn.Module | None = None
) -> RLAnythingLoop:
    """One iteration of the loop (both updates, a checkpoint in a temporary folder) on ``data``; the loop."""
    with tempfile.TemporaryDirectory() as tmp:
        loop = RLAnythingLoop(
            FixedRows(data), policy.runtime, policy, judge_model if judge is None else judge.model, judge,
            iterations=1, checkpoint_dir=tmp, resume=False,
        )  # fmt: skip
        loop.run()
    return loop
