"""The data side of one RLAnything iteration in the coding setting (arXiv 2602.02488; Open-AgentRL's coding loop).

    pool.sample(k) + pending rewrites -> this rank's tasks -> G programs (CodeCollector) -> K unit tests from the
      judge (UnitTestCollector) -> pass matrices (GT tests, generated tests) -> policy rewards (GT pass fraction,
      z-scored per task, tasks with pass-all rate in the policy band) and unit-test rewards (standardized per task,
      tasks with >= 1 correct program; optionally every task, for the tests' format alone) -> IterationData ->
      coding critic feedback -> EnvironmentAdaptation on the writer rank -> pool snapshot for this iteration

A program's outcome is ``+1`` if it passes every GT test, else ``-1`` (the ``pass_rate`` metric); its rows' ``group``
is the task's global index. Judge rows carry their own advantages (standardized unit-test rewards).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from rlanything_core.collect.batching import rows_from_records
from rlanything_core.collect.coding import (
    CodeCollector,
    CodeSample,
    GeneratedTest,
    UnitTestCollector,
    generated_test_pass_matrix,
)
from rlanything_core.environment.feedback import TaskFeedback, coding_feedback
from rlanything_core.environment.pool import TaskPool
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.adaptation import EnvironmentAdaptation
from rlanything_core.loop.iteration import IterationData, TrainingRows, empty_iteration
from rlanything_core.loop.pool_sync import PoolSnapshots
from rlanything_core.records import GeneratedSequence
from rlanything_core.rewards.targets import UnitTestTargets
from rlanything_core.rewards.unit_tests import (
    UnitTestCounts,
    code_pass_fraction,
    correct_codes,
    standardize_unit_test_rewards,
    unit_test_counts,
)
from rlanything_core.sandbox import Sandbox
from rlanything_core.seeding import derive_seed

__all__ = ["CodingLoopDriver", "TaskResult", "coding_spec", "coding_task_from_spec", "score_task"]


def coding_spec(problem: CodingProblem, *, max_tests: int = 8) -> TaskSpec:
    """A root pool task (version 0) from a stdin problem: its JSON-able fields, the first ``max_tests`` tests.

    The data uses the rewriter's keys (``question``, ``test_input``, ``test_output``, ``test_time_limit``) plus the
    output comparison (``float_tolerance``, ``case_sensitive``), so rewritten problems load the same way.

    Raises:
        ValueError: ``problem`` is not a stdin problem.
    """
    if problem.test_type is not TestType.STDIN:
        raise ValueError(f"problem: expected a stdin problem, got {problem.id} ({problem.test_type.value})")
    if max_tests < 1:
        raise ValueError(f"max_tests: expected >= 1, got {max_tests}")
    tests = problem.tests[:max_tests]
    return TaskSpec(
        task_id=problem.id,
        kind="coding",
        root_id=problem.id,
        data={
            "question": problem.prompt,
            "test_input": [t.input for t in tests],
            "test_output": [t.output for t in tests],
            "test_method": "stdio",
            "test_time_limit": float(problem.time_limit_s),
            "float_tolerance": problem.float_tolerance,
            "case_sensitive": problem.case_sensitive,
            "source": problem.source,
        },
    )


def coding_task_from_spec(spec: TaskSpec, sandbox: Sandbox | None = None) -> CodingTask:
    """The ``CodingTask`` of a pool task (a dataset problem or a rewrite)."""
    data = spec.data
    for key in ("question", "test_input", "test_output"):
        if key not in data:
            raise ValueError(f"spec.data: expected key {key!r} (a coding task), got keys {sorted(data)}")
    tol = data.get("float_tolerance")
    problem = CodingProblem(
        id=spec.task_id,
        source=str(data.get("source", "pool")),
        prompt=str(data["question"]),
        test_type=TestType.STDIN,
        tests=tuple(IOTest(str(i), str(o)) for i, o in zip(data["test_input"], data["test_output"])),
        time_limit_s=float(data.get("test_time_limit") or 4.0),
        float_tolerance=None if tol is None else float(tol),
        case_sensitive=bool(data.get("case_sensitive", True)),
    )
    return CodingTask(problem, sandbox)


@dataclass(frozen=True)
class TaskResult:
    """Pass matrices and rewards of one task.

    Attributes:
        gt_pass: ``(G, T_gt)`` bool, programs x ground-truth tests.
        gen_pass: ``(G, K)`` bool, programs x generated tests.
        parsed: ``(K,)`` bool, the generated test parsed.
        pass_all_rate: fraction of programs passing every GT test (the task's success rate).
        policy_advantages: ``(G,)`` z-scored GT pass fractions.
        test_advantages: ``(K,)`` standardized unit-test rewards, or ``None`` when no program is correct.
        counts: UT / Detect counts.
    """

    gt_pass: Tensor
    gen_pass: Tensor
    parsed: Tensor
    pass_all_rate: float
    policy_advantages: Tensor
    test_advantages: Tensor | None
    counts: UnitTestCounts


def score_task(
    task: CodingTask,
    programs: Sequence[CodeSample],
    tests: Sequence[GeneratedTest],
    *,
    max_workers: int = 2,
    targets: UnitTestTargets | None = None,
) -> TaskResult:
    """Run the generated tests and compute the task's rewards (GT results come from ``CodeSample.gt_passed``).

    ``targets``: the judge's targets of the tests (default ``UnitTestTargets()``: a task without a correct program
    gives the judge nothing).
    """
    num_gt = max(1, len(task.tests))
    gt_pass = torch.tensor([(s.gt_passed or [False] * num_gt) for s in programs], dtype=torch.bool)
    gt_pass = gt_pass.reshape(len(programs), num_gt)
    gen_pass = generated_test_pass_matrix(task, [s.program for s in programs], tests, max_workers=max_workers)
    parsed = torch.tensor([t.test is not None for t in tests], dtype=torch.bool)
    fraction = code_pass_fraction(gt_pass)
    test_targets = (targets if targets is not None else UnitTestTargets())(gt_pass, gen_pass, parsed) if tests else None
    return TaskResult(
        gt_pass=gt_pass,
        gen_pass=gen_pass,
        parsed=parsed,
        # from counts, in float64: a float32 mean turns 4/5 into 0.80000001, outside an inclusive 0.8 band edge
        pass_all_rate=int(correct_codes(gt_pass).sum()) / max(1, int(gt_pass.shape[0])),
        policy_advantages=standardize_unit_test_rewards(fraction),
        test_advantages=test_targets,
        counts=unit_test_counts(gt_pass, gen_pass, parsed) if tests else UnitTestCounts(),
    )


@dataclass(frozen=True)
class _Row:
    """One training row in the making: a generated sequence, its cell, its final advantage and its task group."""

    sequence: GeneratedSequence
    cell: tuple[int, int, int]
    advantage: float
    group: int


@dataclass
class _Scored:
    """What scoring this rank's tasks gives: the rows of both models, the rollouts' outcomes, and the metrics' parts."""

    policy: list[_Row] = field(default_factory=list)
    judge: list[_Row] = field(default_factory=list)
    outcome: list[float] = field(default_factory=list)
    counts: UnitTestCounts = field(default_factory=UnitTestCounts)
    rates: dict[str, float] = field(default_factory=dict)
    feedback: list[TaskFeedback] = field(default_factory=list)
    in_band: int = 0
    judged: int = 0


def _training_rows(rows: Sequence[_Row], pad_id: int, *, drop_zero: bool = True) -> TrainingRows | None:
    """The rows; by default only those with a non-zero advantage (the authors drop them: no signal, all cost)."""
    keep = [r for r in rows if r.advantage != 0.0 or not drop_zero]
    if not keep:
        return None
    return TrainingRows(
        rows_from_records([r.sequence for r in keep], [r.cell for r in keep], pad_id=pad_id),
        torch.tensor([r.advantage for r in keep], dtype=torch.float32),
        torch.tensor([r.group for r in keep], dtype=torch.int64),
    )


class CodingLoopDriver(PoolSnapshots):
    """Produces one coding ``IterationData`` per call, keeping the task pool in step with the checkpoints.

    Args:
        coder: samples ``G`` programs per task from the policy and runs them on the GT tests.
        test_writer: samples ``K`` unit tests per task from the judge; ``None``: no judge (policy-only arms).
        pool: the task pool of coding ``TaskSpec``s (its writer is rank 0).
        adaptation: environment adaptation (the coding rewriter), or ``None`` to keep the tasks fixed.
        tasks_per_iteration: tasks sampled from the pool per iteration (pending rewrites come on top).
        seed: the run seed.
        pad_id: padding token of the training rows.
        judge_targets: the judge's targets (standardized unit-test rewards; their ``format_without_reference`` and
            ``drop_zero_rows``); ``None``: no judge rows (the judge writes tests for the metrics only). Programs with
            a zero advantage are always left out.
        policy_band: inclusive pass-all-rate band of tasks whose programs train the policy (the authors: 0.2-0.8).
        sandbox: shared by every task (a default ``Sandbox()`` when ``None``).
        max_workers: concurrent sandbox processes.
    """

    def __init__(
        self,
        *,
        coder: CodeCollector,
        test_writer: UnitTestCollector | None,
        pool: TaskPool,
        adaptation: EnvironmentAdaptation | None,
        tasks_per_iteration: int,
        seed: int,
        pad_id: int,
        judge_targets: UnitTestTargets | None,
        policy_band: tuple[float, float] = (0.2, 0.8),
        sandbox: Sandbox | None = None,
        max_workers: int = 2,
    ) -> None:
        if tasks_per_iteration < 1:
            raise ValueError(f"tasks_per_iteration: expected >= 1, got {tasks_per_iteration}")
        low, high = policy_band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"policy_band: expected 0 <= low <= high <= 1, got {policy_band}")
        self.coder = coder
        self.test_writer = test_writer
        self.pool = pool
        self.adaptation = adaptation
        self.tasks_per_iteration = tasks_per_iteration
        self.seed = seed
        self.pad_id = pad_id
        self.judge_targets = judge_targets
        self.policy_band = policy_band
        self.sandbox = sandbox or Sandbox()
        self.max_workers = max_workers

    def __call__(self, iteration: int) -> IterationData:
        """Sample programs and tests, score them, build the policy and judge rows; update the pool."""
        specs = self.tasks_for(iteration)
        mine = self.my_groups(len(specs))
        if not mine:  # more ranks than task groups: nothing to sample; still in the pool sync and the update
            data = empty_iteration(iteration)
            data.metrics.update(self._adapt({}, [], iteration))
            return data
        tasks = [coding_task_from_spec(specs[g], self.sandbox) for g in mine]
        samples = self.coder.collect(tasks, seed=derive_seed(self.seed, iteration))
        tests = (
            self.test_writer.collect(tasks, seed=derive_seed(self.seed, iteration, "judge"))
            if self.test_writer is not None
            else []
        )
        scored = self._score([specs[g] for g in mine], mine, tasks, samples, tests)
        policy = _training_rows(scored.policy, self.pad_id)
        drop_zero = self.judge_targets is None or self.judge_targets.drop_zero_rows
        judge = _training_rows(scored.judge, self.pad_id, drop_zero=drop_zero)
        metrics = _metrics(scored, samples, tests, policy, judge)
        metrics.update(self._adapt(scored.rates, scored.feedback, iteration))
        return IterationData(iteration=iteration, policy=policy, judge=judge, metrics=metrics)

    def _score(
        self,
        specs: Sequence[TaskSpec],
        groups: Sequence[int],
        tasks: Sequence[CodingTask],
        samples: Sequence[CodeSample],
        tests: Sequence[GeneratedTest],
    ) -> _Scored:
        """Score each task (sandboxed runs, rewards) and turn its programs and tests into rows."""
        cells = {id(s): b for b, s in enumerate(samples)}  # one single-step rollout per program, collection order
        out = _Scored()
        for k, (spec, g, task) in enumerate(zip(specs, groups, tasks)):
            progs = [s for s in samples if s.group_id == k]
            unit = [t for t in tests if t.group_id == k]
            res = score_task(
                task, progs, unit, max_workers=self.max_workers, targets=self.judge_targets
            )
            out.counts = out.counts + res.counts
            out.rates[spec.task_id] = res.pass_all_rate
            valid_cols = res.parsed.nonzero().squeeze(1)
            out.feedback.append(
                coding_feedback(
                    spec.task_id, task.problem.prompt[:200], res.gt_pass.tolist(), res.gen_pass[:, valid_cols].tolist()
                )
            )
            out.outcome.extend(1.0 if bool(row.all()) else -1.0 for row in res.gt_pass)
            if self.policy_band[0] <= res.pass_all_rate <= self.policy_band[1]:
                out.in_band += 1
                out.policy.extend(
                    _Row(s, (cells[id(s)], 0, -1), a, g) for s, a in zip(progs, res.policy_advantages.tolist())
                )
            if self.judge_targets is not None and res.test_advantages is not None:
                out.judged += 1
                test_adv = res.test_advantages.tolist()
                out.judge.extend(_Row(t, (g, 0, j), a, g) for j, (t, a) in enumerate(zip(unit, test_adv)))
        return out

    def _adapt(self, rates: dict[str, float], feedback: list[TaskFeedback], iteration: int) -> dict[str, float]:
        adaptation = self.adaptation

        def plan(all_rates: dict[str, float], all_feedback: list[Any]) -> Any:
            assert adaptation is not None
            return adaptation.plan(
                self.pool,
                [],
                all_rates,
                iteration=iteration,
                seed=derive_seed(self.seed, iteration, "env"),
                feedback={f.task_id: f for f in all_feedback},
            )

        return self._sync_pool(rates, feedback, iteration, adaptation, plan if adaptation is not None else None)


def _metrics(
    scored: _Scored,
    samples: Sequence[CodeSample],
    tests: Sequence[GeneratedTest],
    policy: TrainingRows | None,
    judge: TrainingRows | None,
) -> dict[str, float]:
    """The iteration's scalars: pass rates, band survival, rows, unit-test format and UT / Detect counts."""
    outcome, rates, counts = scored.outcome, scored.rates, scored.counts
    num_tests = len(tests)
    return {
        "rollouts": float(len(samples)),
        "success_rate": sum(o > 0 for o in outcome) / max(1, len(outcome)),
        "pass_rate": sum(o > 0 for o in outcome) / max(1, len(outcome)),
        "mean_task_success": sum(rates.values()) / max(1, len(rates)),
        "gt_pass_fraction": sum(s.pass_fraction for s in samples) / max(1, len(samples)),
        "program_extract_failure_rate": sum(s.program is None for s in samples) / max(1, len(samples)),
        "policy_tasks_in_band": float(scored.in_band),
        "policy_rows": float(0 if policy is None else policy.num_rows),
        "judge_tasks": float(scored.judged),
        "judge_rows": float(0 if judge is None else judge.num_rows),
        "unit_tests": float(num_tests),
        "test_format_failure_rate": sum(t.test is None for t in tests) / max(1, num_tests),
        "ut": counts.ut_accuracy,
        "ut_correct": float(counts.ut_correct),
        "ut_total": float(counts.ut_total),
        "detect": counts.detect_rate,
        "detect_correct": float(counts.detect_correct),
        "detect_total": float(counts.detect_total),
    }
