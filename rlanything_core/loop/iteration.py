"""One iteration's rollouts -> the rows the policy and the judge train on (wiring of the primitives, no new maths).

episodes --collate--> StepBatch --> integrated R = O + lam * mean(votes) (B, S), built once, then
    --integrator (standardizes R; other arms: their own reward)--> advantages (B, S) --policy band, != 0--> policy rows
    --rewards.ConsistencyTargets(R)--> standardized targets (B, S, M) --judge band, != 0--> judge rows

Both row sets leave here with their final advantages: the module trains both models with the same objective
signature ``loss(logprobs, old_logprobs, advantages, mask)`` and never recomputes a reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from rlanything_core.advantages.filters import JUDGE_BAND, POLICY_BAND, TaskBandFilter
from rlanything_core.advantages.functional import group_success_rate, integrated_step_reward
from rlanything_core.advantages.integrators import IntegratedIntegrator, Integrator
from rlanything_core.collect.batching import TokenRows, collate, judge_rows, policy_rows
from rlanything_core.records import Episode
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.types import StepBatch

__all__ = ["IterationData", "TrainingRows", "build_iteration", "empty_iteration"]


@dataclass(frozen=True)
class TrainingRows:
    """Token rows with one scalar advantage each.

    Attributes:
        rows: the token rows.
        advantages: ``(N,)`` float32, one per row: final (the loss takes them as they are).
        group: ``(N,)`` int64, the task group of each row (keeps groups whole when splitting across updates/ranks).
    """

    rows: TokenRows
    advantages: Tensor
    group: Tensor

    @property
    def num_rows(self) -> int:
        """``N``."""
        return int(self.advantages.shape[0])

    def subset(self, index: Tensor) -> TrainingRows:
        """The rows at ``index`` (dynamic padding to their own longest row)."""
        return TrainingRows(
            rows=self.rows.select(index),
            advantages=self.advantages[index],
            group=self.group[index],
        )


@dataclass
class IterationData:
    """Everything one training step needs, produced by the data side of the loop, and nothing it does not.

    The step grid, the integrated reward and the episode records stay with the driver: the rows already carry every
    advantage, and the pool was updated from the records before this leaves the driver.

    Attributes:
        iteration: the iteration number (0-based).
        policy: policy rows (tasks in the policy band, non-zero advantage), or ``None`` when none survive.
        judge: judge rows (tasks in the judge band, non-zero standardized target), or ``None``. Their advantages are
            final: for agent settings the consistency targets (``rewards.ConsistencyTargets``), for coding the
            standardized unit-test rewards.
        metrics: scalars to log (success rate, band survival, judge statistics, ...).
    """

    iteration: int
    policy: TrainingRows | None
    judge: TrainingRows | None
    metrics: dict[str, float] = field(default_factory=dict)


def build_iteration(
    episodes: Sequence[Episode],
    *,
    iteration: int,
    integrator: Integrator,
    pad_id: int,
    judge_targets: ConsistencyTargets | None = None,
    lam: float = 1.0,
    num_votes: int | None = None,
    policy_band: tuple[float, float] = POLICY_BAND,
    judge_band: tuple[float, float] = JUDGE_BAND,
    drop_zero_judge_rows: bool = True,
) -> IterationData:
    """Build the policy and judge training rows of one iteration, with their final advantages.

    Args:
        episodes: rollouts of the iteration (with judge samples when a judge is used).
        iteration: iteration number.
        integrator: step rewards -> ``(B, S)`` advantages (outcome-only, integrated, step-only). An
            ``IntegratedIntegrator`` with this ``lam`` standardizes the step reward built here (built once).
        pad_id: padding token of the rows.
        judge_targets: when given (and votes exist), judge rows are built with these consistency targets.
        lam: ``lam`` of the integrated reward ``R = O + lam * mean(votes)`` that the judge's targets use.
        num_votes: ``m`` (default: as many as the episodes carry).
        policy_band: inclusive success-rate band of tasks whose steps train the policy (1/8, 7/8 by default).
        judge_band: inclusive success-rate band of tasks whose votes train the judge (0.2, 0.8 by default).
        drop_zero_judge_rows: leave out judge rows whose standardized target is exactly 0 (the authors' choice: no
            signal, all cost); ``False`` keeps them, so they add KL and tokens to the judge loss's denominators. The
            judge loss's ``drop_zero_advantage`` (the loop trains on rows built here, so it is decided here).
    """
    batch = collate(episodes, num_votes=num_votes)
    step_reward = _integrated_reward(batch, lam)
    success = group_success_rate(batch.outcome, batch.group_index)
    metrics: dict[str, float] = {
        "rollouts": float(batch.num_rollouts),
        "steps": float(batch.step_mask.sum()),
        "success_rate": float((batch.outcome > 0).float().mean()),
    }
    if isinstance(integrator, IntegratedIntegrator) and batch.has_votes and integrator.lam == lam:
        advantages = integrator.standardize(step_reward, batch)  # the same R as the judge's targets
    else:
        advantages = integrator(batch)
    policy = _policy_rows(episodes, batch, advantages, pad_id=pad_id, band=policy_band, metrics=metrics)
    judge = None
    if judge_targets is not None and batch.has_votes:
        judge = _judge_rows(
            episodes, batch, step_reward, judge_targets, pad_id=pad_id, num_votes=num_votes, band=judge_band,
            drop_zero=drop_zero_judge_rows, metrics=metrics,
        )
    metrics["mean_task_success"] = float(success.mean()) if success.numel() else 0.0
    return IterationData(iteration=iteration, policy=policy, judge=judge, metrics=metrics)


def empty_iteration(iteration: int) -> IterationData:
    """The iteration of a rank that rolled out nothing (more ranks than task groups): no rollout, no row."""
    return IterationData(iteration=iteration, policy=None, judge=None, metrics={"rollouts": 0.0, "steps": 0.0})


def _integrated_reward(batch: StepBatch, lam: float) -> Tensor:
    """``(B, S)`` ``R = O + lam * mean(votes)``; zeros when the batch has no votes."""
    if not batch.has_votes:
        return torch.zeros(batch.step_mask.shape)
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    return integrated_step_reward(
        batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid, lam=lam
    )


def _policy_rows(
    episodes: Sequence[Episode],
    batch: StepBatch,
    advantages: Tensor,
    *,
    pad_id: int,
    band: tuple[float, float],
    metrics: dict[str, float],
) -> TrainingRows | None:
    """One row per step of a task in ``band`` whose ``(B, S)`` advantage is non-zero."""
    keep = TaskBandFilter(band=band)(batch)
    rows = policy_rows(episodes, pad_id=pad_id)
    b_idx, s_idx = rows.index[:, 0], rows.index[:, 1]
    row_adv = advantages[b_idx, s_idx].float()
    selected = keep[b_idx] & (row_adv != 0)  # the authors drop zero-advantage samples: no signal, all cost
    metrics["policy_rows"] = float(selected.sum())
    metrics["policy_tasks_in_band"] = float(torch.unique(batch.group_index[keep]).numel())
    if not bool(selected.any()):
        return None
    index = selected.nonzero().squeeze(1)
    return TrainingRows(rows.select(index), row_adv[index], batch.group_index[b_idx[index]])


def _judge_rows(
    episodes: Sequence[Episode],
    batch: StepBatch,
    step_reward: Tensor,
    targets: ConsistencyTargets,
    *,
    pad_id: int,
    num_votes: int | None,
    band: tuple[float, float],
    drop_zero: bool,
    metrics: dict[str, float],
) -> TrainingRows | None:
    """One row per requested vote of a task in ``band`` (whose standardized consistency target is non-zero)."""
    assert batch.vote_mask is not None and batch.vote_valid is not None
    raw, standardized = targets(batch, step_reward)
    vote_adv = standardized[batch.vote_mask].float()
    jrows = judge_rows(episodes, pad_id=pad_id, num_votes=num_votes)
    keep = TaskBandFilter(band=band)(batch)
    j_b = jrows.index[:, 0]
    selected = keep[j_b] & (vote_adv != 0) if drop_zero else keep[j_b]
    metrics["judge_rows"] = float(selected.sum())
    vm, vv = batch.vote_mask, batch.vote_valid
    metrics["judge_format_failure_rate"] = float((vm & ~vv).sum()) / max(1, int(vm.sum()))
    batch_metrics = targets.metrics(batch, raw)
    metrics["judge_target_mean"] = float(batch_metrics["target_mean"])
    metrics["judge_vote_agreement"] = float(batch_metrics["vote_agreement"])
    if not bool(selected.any()):
        return None
    index = selected.nonzero().squeeze(1)
    return TrainingRows(jrows.select(index), vote_adv[index], batch.group_index[j_b[index]])
