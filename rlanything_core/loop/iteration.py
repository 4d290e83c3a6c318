"""One iteration's rollouts -> the rows the policy and the judge train on (wiring of the primitives, no new maths).

episodes --collate--> StepBatch --integrator--> advantages (B, S) --policy band, != 0--> policy rows
--integrated R--> consistency targets (B, S, M) --judge band, != 0--> judge rows
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from rlanything_core.advantages.filters import JUDGE_BAND, POLICY_BAND, TaskBandFilter
from rlanything_core.advantages.functional import group_success_rate, integrated_step_reward
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.collect.batching import TokenRows, collate, judge_rows, policy_rows
from rlanything_core.losses.consistency import ConsistencyRewardLoss
from rlanything_core.records import Episode
from rlanything_core.types import StepBatch

__all__ = ["IterationData", "TrainingRows", "build_iteration"]


@dataclass(frozen=True)
class TrainingRows:
    """Token rows with one scalar advantage each.

    Attributes:
        rows: the token rows.
        advantages: ``(N,)`` float32, one per row.
        group: ``(N,)`` int64, the task group of each row (keeps groups whole when splitting across updates/ranks).
        vote_rows: ``(N,)`` int64 for judge rows: the position of each row in ``vote_mask.nonzero()`` order
            (what ``ConsistencyRewardLoss(rows=...)`` takes); empty for policy rows.
    """

    rows: TokenRows
    advantages: Tensor
    group: Tensor
    vote_rows: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))

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
            vote_rows=self.vote_rows[index] if self.vote_rows.numel() else self.vote_rows,
        )


@dataclass
class IterationData:
    """Everything one training step needs, produced by the data side of the loop.

    Attributes:
        iteration: the iteration number (0-based).
        batch: the step grid of every rollout of the iteration.
        step_reward: ``(B, S)`` integrated step reward ``O + lam * mean(votes)`` (zeros without votes).
        policy: policy rows (tasks in the policy band, non-zero advantage), or ``None`` when none survive.
        judge: judge rows (tasks in the judge band, non-zero standardized target), or ``None``.
        metrics: scalars to log (success rate, band survival, judge statistics, ...).
        episodes: the records, for critic feedback and evaluation (not sent to the model).
    """

    iteration: int
    batch: StepBatch
    step_reward: Tensor
    policy: TrainingRows | None
    judge: TrainingRows | None
    metrics: dict[str, float] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)


def build_iteration(
    episodes: Sequence[Episode],
    *,
    iteration: int,
    integrator: Integrator,
    pad_id: int,
    judge_loss: ConsistencyRewardLoss | None = None,
    lam: float = 1.0,
    num_votes: int | None = None,
    policy_band: tuple[float, float] = POLICY_BAND,
    judge_band: tuple[float, float] = JUDGE_BAND,
) -> IterationData:
    """Build the policy and judge training rows of one iteration.

    Args:
        episodes: rollouts of the iteration (with judge samples when a judge is used).
        iteration: iteration number.
        integrator: step rewards -> ``(B, S)`` advantages (outcome-only, integrated, step-only).
        pad_id: padding token of the rows.
        judge_loss: when given (and votes exist), judge rows are built with its consistency targets.
        lam: ``lam`` of the integrated reward that the judge's consistency targets use.
        num_votes: ``m`` (default: as many as the episodes carry).
        policy_band: inclusive success-rate band of tasks whose steps train the policy (1/8, 7/8 by default).
        judge_band: inclusive success-rate band of tasks whose votes train the judge (0.2, 0.8 by default).
    """
    batch = collate(episodes, num_votes=num_votes)
    if batch.has_votes:
        assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
        step_reward = integrated_step_reward(
            batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid, lam=lam
        )
    else:
        step_reward = torch.zeros(batch.step_mask.shape)
    success = group_success_rate(batch.outcome, batch.group_index)
    metrics: dict[str, float] = {
        "rollouts": float(batch.num_rollouts),
        "steps": float(batch.step_mask.sum()),
        "success_rate": float((batch.outcome > 0).float().mean()),
    }

    advantages = integrator(batch)
    keep_policy = TaskBandFilter(band=policy_band)(batch)
    rows = policy_rows(episodes, pad_id=pad_id)
    b_idx, s_idx = rows.index[:, 0], rows.index[:, 1]
    row_adv = advantages[b_idx, s_idx].float()
    selected = keep_policy[b_idx] & (row_adv != 0)  # the authors drop zero-advantage samples: no signal, all cost
    metrics["policy_rows"] = float(selected.sum())
    metrics["policy_tasks_in_band"] = float(torch.unique(batch.group_index[keep_policy]).numel())
    policy = None
    if bool(selected.any()):
        index = selected.nonzero().squeeze(1)
        policy = TrainingRows(rows.select(index), row_adv[index], batch.group_index[b_idx[index]])

    judge = None
    if judge_loss is not None and batch.has_votes:
        assert batch.vote_mask is not None
        vote_adv = judge_loss.row_advantages(batch, step_reward).float()
        jrows = judge_rows(episodes, pad_id=pad_id, num_votes=num_votes)
        keep_judge = TaskBandFilter(band=judge_band)(batch)
        j_b = jrows.index[:, 0]
        jselected = keep_judge[j_b] & (vote_adv != 0)
        metrics["judge_rows"] = float(jselected.sum())
        vm, vv = batch.vote_mask, batch.vote_valid
        assert vv is not None
        metrics["judge_format_failure_rate"] = float((vm & ~vv).sum()) / max(1, int(vm.sum()))
        if bool(jselected.any()):
            index = jselected.nonzero().squeeze(1)
            judge = TrainingRows(jrows.select(index), vote_adv[index], batch.group_index[j_b[index]], index)
    metrics["mean_task_success"] = float(success.mean()) if success.numel() else 0.0
    return IterationData(
        iteration=iteration,
        batch=batch,
        step_reward=step_reward,
        policy=policy,
        judge=judge,
        metrics=metrics,
        episodes=list(episodes),
    )
