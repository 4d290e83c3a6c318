"""The coding setting's scorer on the step-reward seam: pass matrices -> step reward, judge targets, both models' rows.

    TaskRollouts (programs with GT results, unit tests, their TaskResult: scored once, in the driver's judge stage)
      --collect.coding.program_episodes--> one-step Episodes --RolloutBatch--> batch
      --step reward (B, 1) = GT pass fraction, judge targets (B, 1, K) = UnitTestTargets (tasks with a reference)-->
      --loop.iteration.build_rows (integrator: rewards.PassFractionIntegrator)--> IterationData

The seam is ``loop.iteration.build_rows``, the agent settings' row builder: coding brings its step reward (where they
have ``advantages.StepReward``) and its judge targets (where they have ``rewards.ConsistencyTargets``). Nothing here
runs a program or scores a task: the driver's ``judge`` stage (``loop/coding_driver.py``) ran the tests in the sandbox
and scored each task once (``score_task``); the rows and the environment adaptation both read that ``TaskResult``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.collect.coding import CodeSample, GeneratedTest, generated_test_pass_matrix, program_episodes
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.format_watch import warn_format_failures
from rlanything_core.loop.iteration import IterationData, JudgeTargets, build_rows
from rlanything_core.rewards.targets import UnitTestTargets
from rlanything_core.rewards.unit_tests import (
    UnitTestCounts,
    code_pass_fraction,
    correct_codes,
    unit_test_counts,
)
from rlanything_core.types import RolloutBatch

__all__ = ["TaskResult", "TaskRollouts", "coding_rows", "score_task"]


@dataclass(frozen=True)
class TaskResult:
    """Pass matrices and rewards of one task.

    Attributes:
        gt_pass: ``(G, T_gt)`` bool, programs x ground-truth tests.
        gen_pass: ``(G, K)`` bool, programs x generated tests.
        parsed: ``(K,)`` bool, the generated test parsed.
        pass_all_rate: fraction of programs passing every GT test (the task's success rate).
        test_advantages: ``(K,)`` standardized unit-test rewards, or ``None`` when no program is correct.
        counts: UT / Detect counts.
    """

    gt_pass: Tensor
    gen_pass: Tensor
    parsed: Tensor
    pass_all_rate: float
    test_advantages: Tensor | None
    counts: UnitTestCounts


def score_task(
    task: CodingTask,
    programs: Sequence[CodeSample],
    tests: Sequence[GeneratedTest],
    *,
    max_workers: int = 2,
    targets: UnitTestTargets | None = None,
    gen_pass: Tensor | None = None,
) -> TaskResult:
    """Run the generated tests and compute the task's rewards (GT results come from ``CodeSample.gt_passed``).

    ``targets``: the judge's targets of the tests (default ``UnitTestTargets()``: a task without a correct program
    gives the judge nothing). ``gen_pass``: the ``(G, K)`` pass matrix of the generated tests when they already ran
    (the driver's ``judge`` stage); ``None`` runs them here (nothing runs without a parsed test).
    """
    num_gt = max(1, len(task.tests))
    gt_pass = torch.tensor([(s.gt_passed or [False] * num_gt) for s in programs], dtype=torch.bool)
    gt_pass = gt_pass.reshape(len(programs), num_gt)
    if gen_pass is None:
        gen_pass = generated_test_pass_matrix(task, [s.program for s in programs], tests, max_workers=max_workers)
    parsed = torch.tensor([t.test is not None for t in tests], dtype=torch.bool)
    test_targets = (targets if targets is not None else UnitTestTargets())(gt_pass, gen_pass, parsed) if tests else None
    return TaskResult(
        gt_pass=gt_pass,
        gen_pass=gen_pass,
        parsed=parsed,
        # from counts, in float64: a float32 mean turns 4/5 into 0.80000001, outside an inclusive 0.8 band edge
        pass_all_rate=int(correct_codes(gt_pass).sum()) / max(1, int(gt_pass.shape[0])),
        test_advantages=test_targets,
        counts=unit_test_counts(gt_pass, gen_pass, parsed) if tests else UnitTestCounts(),
    )


@dataclass(frozen=True)
class TaskRollouts:
    """One task's share of a coding iteration, as the stages fill it in.

    Attributes:
        spec: the pool task.
        group: its global group index in the iteration (its rows' ``group``).
        task: the runnable task (its problem and the sandbox).
        programs: the ``G`` programs of the policy, GT tests run (``collect``).
        tests: the ``K`` unit tests of the judge (``judge``; empty without a judge).
        result: the task's pass matrices and rewards (``score_task``, in the ``judge`` stage, with or without a
            judge), or ``None`` before it: the rows and the adaptation read it, so a task is scored once.
    """

    spec: TaskSpec
    group: int
    task: CodingTask
    programs: tuple[CodeSample, ...]
    tests: tuple[GeneratedTest, ...] = ()
    result: TaskResult | None = None

    @property
    def scored(self) -> TaskResult:
        """``result``, once the ``judge`` stage has set it.

        Raises:
            ValueError: the task was not scored (the driver's ``judge`` stage scores every task).
        """
        if self.result is None:
            raise ValueError(f"task {self.spec.task_id!r}: expected a scored task (the judge stage's TaskResult), "
                             "got result=None")
        return self.result


def coding_rows(
    tasks: Sequence[TaskRollouts],
    *,
    iteration: int,
    pad_id: int,
    integrator: Integrator,
    judge_targets: UnitTestTargets | None,
    policy_band: tuple[float, float],
) -> IterationData:
    """Both models' rows of the scored tasks, through ``build_rows`` (nothing runs and nothing is scored here).

    Args:
        tasks: this rank's tasks, scored (``result`` set by the ``judge`` stage); at least one.
        iteration: iteration number.
        pad_id: padding token of the rows.
        integrator: the policy's advantages from the step reward (coding: ``PassFractionIntegrator``).
        judge_targets: the unit tests' targets (those the tasks were scored with: their ``drop_zero_rows``), or
            ``None``: no judge rows.
        policy_band: inclusive pass-all-rate band of tasks whose programs train the policy.

    Raises:
        ValueError: no task, or a task not scored.
    """
    if not tasks:
        raise ValueError("tasks: expected at least one task, got none")
    results = [t.scored for t in tasks]
    episodes = [e for t in tasks for e in program_episodes(t.programs, t.tests, group=t.group, goal=t.task.prompt)]
    batch = RolloutBatch.from_episodes(episodes, pad_id=pad_id)
    reward = torch.cat([code_pass_fraction(r.gt_pass) for r in results]).unsqueeze(1)
    judge = None
    judged = 0
    if judge_targets is not None and batch.steps.vote_mask is not None:
        targets = torch.zeros(batch.steps.vote_mask.shape)
        keep = torch.zeros(batch.steps.num_rollouts, dtype=torch.bool)
        first = 0  # a task's tests sit on its first program's step (program_episodes)
        for t, r in zip(tasks, results):
            if r.test_advantages is not None:
                judged += 1
                targets[first, 0, : len(t.tests)] = r.test_advantages
                keep[first : first + len(t.programs)] = True
            first += len(t.programs)
        judge = JudgeTargets(targets, keep, drop_zero=judge_targets.drop_zero_rows)
    data = build_rows(batch, iteration=iteration, integrator=integrator, step_reward=reward, policy_band=policy_band,
                      judge=judge)  # fmt: skip
    data.metrics.update(_metrics(tasks, results, data, judged=judged, policy_band=policy_band))
    warn_format_failures(data.metrics, where=f"training iteration {iteration}")
    return data


def _metrics(
    tasks: Sequence[TaskRollouts],
    results: Sequence[TaskResult],
    data: IterationData,
    *,
    judged: int,
    policy_band: tuple[float, float],
) -> dict[str, float]:
    """The iteration's scalars: pass rates, band survival, rows, unit-test format and UT / Detect counts."""
    samples = [s for t in tasks for s in t.programs]
    tests = [x for t in tasks for x in t.tests]
    outcome = [1.0 if bool(row.all()) else -1.0 for r in results for row in r.gt_pass]
    rates = [r.pass_all_rate for r in results]
    counts = sum((r.counts for r in results), UnitTestCounts())
    num_tests = len(tests)
    return {
        "rollouts": float(len(samples)),
        "success_rate": sum(o > 0 for o in outcome) / max(1, len(outcome)),
        "pass_rate": sum(o > 0 for o in outcome) / max(1, len(outcome)),
        "mean_task_success": sum(rates) / max(1, len(rates)),
        "gt_pass_fraction": sum(s.pass_fraction for s in samples) / max(1, len(samples)),
        "program_extract_failure_rate": sum(s.program is None for s in samples) / max(1, len(samples)),
        "policy_tasks_in_band": float(sum(policy_band[0] <= r <= policy_band[1] for r in rates)),
        "policy_rows": float(0 if data.policy is None else data.policy.num_rows),
        "judge_tasks": float(judged),
        "judge_rows": float(0 if data.judge is None else data.judge.num_rows),
        "unit_tests": float(num_tests),
        "test_format_failure_rate": sum(t.test is None for t in tests) / max(1, num_tests),
        "ut": counts.ut_accuracy,
        "ut_correct": float(counts.ut_correct),
        "ut_total": float(counts.ut_total),
        "detect": counts.detect_rate,
        "detect_correct": float(counts.detect_correct),
        "detect_total": float(counts.detect_total),
    }
