"""One iteration's rollouts -> the rows the policy and the judge train on (wiring of the primitives, no new maths).

episodes --RolloutBatch.from_episodes--> step grid + policy rows + judge rows (built once, joined by their cells)
    --scorer--> step reward R (B, S), computed once, shared by both models
    --build_rows: integrator(grid, R) --> advantages (B, S) --policy band, != 0--> policy rows
                  judge targets (B, S, M) --judge keep, != 0--> judge rows

The seam between a setting and this row builder is the *step-reward seam*: a ``RolloutBatch``, the ``(B, S)`` step
reward its scorer gives, and the judge's ``(B, S, M)`` targets with the tasks they keep (``JudgeTargets``).
``build_iteration`` is the agent settings' scorer on it (``R = O + lam * mean(votes)`` from ``StepReward``, the
consistency targets of ``rewards.ConsistencyTargets``, the judge band); the coding driver
(``loop/coding_driver.py``) brings the GT pass fraction of each single-step program and the unit tests' targets
(``rewards.UnitTestTargets``). Both go through ``build_rows``, so both models' rows of every setting are selected by
the same code.

Both row sets leave here with their final advantages: the module trains both models with the same objective
signature ``loss(logprobs, old_logprobs, advantages, mask)`` and never recomputes a reward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from rlanything_core.advantages.filters import JUDGE_BAND, POLICY_BAND, in_band
from rlanything_core.advantages.functional import group_success_rate
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.loop.vote_mode import VoteMode, vote_mode_reward
from rlanything_core.records import Episode
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.types import RolloutBatch, StepBatch, TrainingRows

__all__ = ["IterationData", "JudgeTargets", "ScoredSteps", "build_iteration", "build_rows", "empty_iteration"]

ScoredSteps = Callable[[Tensor | None, Tensor], None]
"""``(step_reward R or None, advantages)``, both ``(B, S)`` over the batch's rollouts: what a recorder is handed once
the rewards exist (``loop.step_records``), before any row is built."""


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
    step_reward: StepReward | None = None,
    judge_targets: ConsistencyTargets | None = None,
    num_votes: int | None = None,
    policy_band: tuple[float, float] = POLICY_BAND,
    judge_band: tuple[float, float] = JUDGE_BAND,
    vote_mode: VoteMode = VoteMode.SAMPLED,
    on_scored: ScoredSteps | None = None,
) -> IterationData:
    """Build the policy and judge training rows of one iteration, with their final advantages.

    Args:
        episodes: rollouts of the iteration (with judge samples when a judge is used).
        iteration: iteration number.
        integrator: ``(grid, R) -> (B, S)`` advantages of the policy (outcome-only, integrated, step-only).
        pad_id: padding token of the rows.
        step_reward: ``R = O + lam * mean(votes)`` (owns ``lam``; default ``StepReward()``, ``lam = 1``), computed
            once when the episodes carry votes and given to both the integrator and the judge's targets.
        judge_targets: when given (and votes exist), judge rows are built with these targets; their
            ``drop_zero_rows`` decides whether rows with a zero target are left out.
        num_votes: ``m`` (default: as many as the episodes carry).
        policy_band: inclusive success-rate band of tasks whose steps train the policy (1/8, 7/8 by default).
        judge_band: inclusive success-rate band of tasks whose votes train the judge (0.2, 0.8 by default).
        vote_mode: what ``R``'s judge term reads: the sampled votes' mean (the paper) or each step's expected vote
            ``2 P(+1) - 1`` (``loop.vote_mode``); the judge still trains on its sampled votes.
        on_scored: called once with ``(R, advantages)`` of the episodes (the step records), before rows are built.

    Raises:
        ValueError: the integrator needs votes (``needs_votes``) and the episodes carry none, or bad episodes.
    """
    batch = RolloutBatch.from_episodes(episodes, pad_id=pad_id, num_votes=num_votes)
    steps = batch.steps
    scorer = step_reward if step_reward is not None else StepReward()
    reward = vote_mode_reward(vote_mode, scorer, steps, episodes) if steps.has_votes else None
    judge: JudgeTargets | None = None
    judge_metrics: dict[str, float] = {}
    if judge_targets is not None and reward is not None:
        judge = _consistency(batch, reward, judge_targets, band=judge_band, metrics=judge_metrics)
    data = build_rows(batch, iteration=iteration, integrator=integrator, step_reward=reward, policy_band=policy_band,
                      judge=judge, on_scored=on_scored)  # fmt: skip
    data.metrics.update(judge_metrics)
    return data


@dataclass(frozen=True)
class JudgeTargets:
    """The judge's side of the step-reward seam: its final targets on the vote grid and the tasks that train it.

    Attributes:
        targets: ``(B, S, M)`` floating, the judge rows' advantages (0 outside the requested cells).
        keep: ``(B,)`` bool, the rollouts whose judge rows may train (the judge band; coding: tasks with a reference).
        drop_zero: leave out rows whose target is exactly 0 (the targets' ``drop_zero_rows``).
    """

    targets: Tensor
    keep: Tensor
    drop_zero: bool = True


def build_rows(
    batch: RolloutBatch,
    *,
    iteration: int,
    integrator: Integrator,
    step_reward: Tensor | None,
    policy_band: tuple[float, float] = POLICY_BAND,
    judge: JudgeTargets | None = None,
    on_scored: ScoredSteps | None = None,
) -> IterationData:
    """The one row builder of every setting: the policy's advantages from ``integrator``, both models' rows.

    Args:
        batch: the iteration's rollouts (``RolloutBatch``; its ``steps.outcome`` decides the task bands).
        iteration: iteration number.
        integrator: ``(grid, R) -> (B, S)`` advantages of the policy.
        step_reward: the scorer's ``(B, S)`` step reward ``R`` (agent: ``StepReward``; coding: the GT pass
            fraction), or ``None`` where there is none (an outcome-only arm without votes).
        policy_band: inclusive success-rate band of tasks whose steps train the policy.
        judge: the judge's targets and kept rollouts, or ``None``: no judge rows.
        on_scored: called once with ``(step_reward, advantages)`` (the step records), before rows are built.

    Raises:
        ValueError: the integrator needs votes (``needs_votes``) and the batch carries none, or a bad column.
    """
    steps = batch.steps
    if integrator.needs_votes and not steps.has_votes:
        raise ValueError(
            f"integrator: {type(integrator).__name__} needs judge votes (needs_votes), got episodes without votes"
        )
    advantages = integrator(steps, step_reward)
    if on_scored is not None:
        on_scored(step_reward, advantages)
    batch = batch.with_columns(step_reward=step_reward, advantages=advantages)
    success = _task_success_rate(steps)
    metrics: dict[str, float] = {
        "rollouts": float(steps.num_rollouts),
        "steps": float(steps.step_mask.sum()),
        "success_rate": float((steps.outcome > 0).float().mean()),
    }
    policy_keep = in_band(success, policy_band)
    policy = batch.policy_training_rows(policy_keep)  # the authors drop zero-advantage samples: no signal, all cost
    metrics["policy_rows"] = float(0 if policy is None else policy.num_rows)
    metrics["policy_tasks_in_band"] = float(torch.unique(steps.group_index[policy_keep]).numel())
    judge_rows = None
    if judge is not None:
        judge_rows = batch.with_columns(judge_targets=judge.targets).judge_training_rows(
            judge.keep, drop_zero=judge.drop_zero
        )
        metrics["judge_rows"] = float(0 if judge_rows is None else judge_rows.num_rows)
    metrics["mean_task_success"] = float(success.to(steps.outcome.dtype).mean()) if success.numel() else 0.0
    return IterationData(iteration=iteration, policy=policy, judge=judge_rows, metrics=metrics)


def empty_iteration(iteration: int) -> IterationData:
    """The iteration of a rank that rolled out nothing (more ranks than task groups): no rollout, no row."""
    return IterationData(iteration=iteration, policy=None, judge=None, metrics={"rollouts": 0.0, "steps": 0.0})


def _task_success_rate(steps: StepBatch) -> Tensor:
    """``(B,)`` float64 success rate of each rollout's task group: what the task bands (``in_band``) are met with.

    float64 from the counts: rounded to float32, ``4/5`` becomes ``0.80000001`` and falls off an inclusive band edge.
    """
    return group_success_rate(steps.outcome, steps.group_index, dtype=torch.float64)


def _consistency(
    batch: RolloutBatch,
    step_reward: torch.Tensor,
    targets: ConsistencyTargets,
    *,
    band: tuple[float, float],
    metrics: dict[str, float],
) -> JudgeTargets:
    """The agent judge's side of the seam: standardized consistency targets of the tasks in ``band``; their metrics."""
    steps = batch.steps
    assert steps.vote_mask is not None and steps.vote_valid is not None
    raw, standardized = targets(steps, step_reward)
    vm, vv = steps.vote_mask, steps.vote_valid
    metrics["judge_format_failure_rate"] = float((vm & ~vv).sum()) / max(1, int(vm.sum()))
    batch_metrics = targets.metrics(steps, raw)
    metrics["judge_target_mean"] = float(batch_metrics["target_mean"])
    metrics["judge_vote_agreement"] = float(batch_metrics["vote_agreement"])
    return JudgeTargets(standardized, in_band(_task_success_rate(steps), band), drop_zero=targets.drop_zero_rows)
