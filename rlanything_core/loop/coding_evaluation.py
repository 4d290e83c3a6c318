"""Evaluation of the coding setting on held-out problems: the policy's pass@1 and the judge's UT / Detect.

pass@1 is the mean over problems of the fraction of sampled programs that pass every test (greedy samples give the
greedy pass rate). The judge writes ``K`` unit tests per problem; UT and Detect (arXiv 2602.02488 Table 1, Open-AgentRL
reward/llm_rl_reward.py) are computed against the programs sampled for that problem, with their denominators logged.

Stdin problems run a generated test as stdin/expected stdout. Functional problems (LeetCode ``class Solution``) run it
as a call: the judge is asked for the call's keyword arguments as **Test Input** (the statements' own example format,
``nums = [1, 2], k = 3``) and the returned value as a Python literal as **Test Output**. Both are data: parsed as
literals (:func:`~rlanything_core.sandbox.literal_call.parse_literal_call`), and the harness calls the entry point
with them itself; a test that is not literal data counts as a format failure and fails every program. No text of the
judge's is ever executed (before, an expected value of ``[0]) or (True`` pasted into ``assert`` passed every
program).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from rlanything_core.collect.coding import CodeCollector, GeneratedTest, UnitTestCollector, generated_test_pass_matrix
from rlanything_core.envs.coding.problem import TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.format_watch import warn_format_failures
from rlanything_core.loop.protocol import SINGLE_PROCESS, Collectives
from rlanything_core.rewards.unit_tests import UnitTestCounts, unit_test_counts
from rlanything_core.sandbox.literal_call import LiteralCall, literal_call_test, parse_literal_call
from rlanything_core.seeding import derive_seed

__all__ = [
    "CodingEvalSplit",
    "CodingEvaluator",
    "FUNCTIONAL_TEST_FORMAT",
    "functional_test_calls",
    "functional_test_pass_matrix",
]

FUNCTIONAL_TEST_FORMAT = (
    "\n\nFor this problem, write the **Test Input** as the call's keyword arguments in the examples' format (for "
    "example `nums = [1, 2], k = 3`) and the **Test Output** as the returned value, a Python literal."
)


@dataclass(frozen=True)
class CodingEvalSplit:
    """A named set of held-out coding tasks (``name`` prefixes the metrics)."""

    name: str
    tasks: tuple[CodingTask, ...]


def functional_test_calls(tests: Sequence[GeneratedTest]) -> list[LiteralCall | None]:
    """Each generated call-style test as literal data, or ``None`` (a format failure) where it is not."""
    calls: list[LiteralCall | None] = []
    for t in tests:
        try:
            calls.append(None if t.test is None else parse_literal_call(*t.test))
        except ValueError:
            calls.append(None)
    return calls


def functional_test_pass_matrix(
    task: CodingTask, programs: Sequence[str | None], tests: Sequence[GeneratedTest], *, max_workers: int = 2
) -> Tensor:
    """``(C, K)`` bool for a functional problem: program ``c`` passes the call-style generated test ``k``.

    A test that is not literal data (:func:`functional_test_calls`) fails every program.
    """
    problem = task.problem
    if problem.test_type is not TestType.FUNCTIONAL or not problem.entry_point:
        raise ValueError(f"task: expected a functional problem with an entry point, got {problem.id}")
    calls = functional_test_calls(tests)
    valid = [k for k, c in enumerate(calls) if c is not None]
    matrix = torch.zeros(len(programs), len(tests), dtype=torch.bool)
    rows = [c for c, p in enumerate(programs) if p is not None]
    if not valid or not rows:
        return matrix
    checks = [
        literal_call_test(
            problem.entry_point,
            calls[k],  # type: ignore[arg-type]
            time_limit_s=problem.time_limit_s,
            setup=problem.harness_setup,
            program_names=problem.check_program_names,
        )
        for k in valid
    ]
    jobs = [(problem.full_program(programs[c] or ""), checks) for c in rows]
    results = task.sandbox.run_many(jobs, judge=task.judge, max_workers=max_workers)
    for c, r in zip(rows, results):
        for k, tr in zip(valid, r.tests):
            matrix[c, k] = tr.passed
    return matrix


@dataclass(frozen=True)
class _TaskResult:
    """What one problem contributes to its split's metrics (gathered from the rank that evaluated it)."""

    correct: tuple[bool, ...]  # per sampled program: passes every ground-truth test
    pass_fractions: tuple[float, ...]  # per sampled program: fraction of ground-truth tests passed
    counts: UnitTestCounts | None = None  # the judge's UT / Detect counts (``None``: no test writer)
    tests: int = 0  # unit tests written
    unparsed: int = 0  # of which did not parse (format failures)


class CodingEvaluator:
    """Pass@1 of the policy and UT / Detect of the judge on each split.

    Args:
        coder: samples the evaluation programs (its own ``samples_per_task`` and sampling, e.g. greedy).
        splits: held-out problems.
        test_writer: the judge's unit-test writer (``None``: policy metrics only).
        seed: evaluation seed (the same samples at every evaluation when the weights are the same).
        max_workers: concurrent sandbox processes.
        sharded: in a process group, every rank evaluates the problems ``k % world == rank`` of each split and the
            per-problem results are gathered (``collectives.all_gather_object``, the loop's runtime), so every rank
            must call the evaluator and each
            gets the metrics of a one-process evaluation: problem ``k``'s programs and tests are seeded by
            ``(seed, split, k)`` and their sample index, whatever else is in the batch. Outside a process group (or
            with one rank) it makes no difference.
    """

    def __init__(
        self,
        coder: CodeCollector,
        splits: Sequence[CodingEvalSplit],
        *,
        test_writer: UnitTestCollector | None = None,
        seed: int = 1234,
        max_workers: int = 2,
        sharded: bool = False,
    ) -> None:
        self.coder = coder
        self.splits = list(splits)
        self.test_writer = test_writer
        self.seed = seed
        self.max_workers = max_workers
        self.sharded = sharded  # read by RLAnythingLoop.evaluate: call on every rank, not on rank 0 alone
        self.collectives: Collectives = SINGLE_PROCESS  # what a sharded evaluation gathers over (the loop's runtime)

    @torch.no_grad()
    def __call__(self) -> dict[str, float]:
        """``<split>/pass@1``, ``<split>/ut`` (+ ``ut_total``), ``<split>/detect`` (+ ``detect_total``), ...."""
        rank, world = (self.collectives.rank, self.collectives.world_size) if self.sharded else (0, 1)
        metrics: dict[str, float] = {}
        for split in self.splits:
            tasks = list(split.tasks)
            if not tasks:
                continue
            mine = list(range(rank, len(tasks), world))
            local = dict(zip(mine, self._evaluate(split.name, [tasks[k] for k in mine], mine))) if mine else {}
            results: dict[int, _TaskResult] = {}
            for part in self.collectives.all_gather_object(local) if world > 1 else [local]:
                results.update(part)
            metrics.update(self._metrics(split.name, [results[k] for k in range(len(tasks))]))
        return metrics

    def _evaluate(self, name: str, tasks: list[CodingTask], group_ids: list[int]) -> list[_TaskResult]:
        """Sample and check the programs (and the judge's tests) of ``tasks``, the problems ``group_ids`` of a split."""
        samples = self.coder.collect(tasks, seed=derive_seed(self.seed, name), group_ids=group_ids)
        per_task = [[s for s in samples if s.group_id == g] for g in group_ids]
        if self.test_writer is None:
            return [
                _TaskResult(tuple(s.correct for s in group), tuple(s.pass_fraction for s in group))
                for group in per_task
            ]
        prompts = [
            CodingTask(replace(t.problem, prompt=t.problem.prompt + FUNCTIONAL_TEST_FORMAT), t.sandbox)
            if t.problem.test_type is TestType.FUNCTIONAL
            else t
            for t in tasks
        ]
        tests = self.test_writer.collect(prompts, seed=derive_seed(self.seed, name, "judge"), group_ids=group_ids)
        out = []
        for task, g, group in zip(tasks, group_ids, per_task):
            unit = [t for t in tests if t.group_id == g]
            programs = [s.program for s in group]
            if task.problem.test_type is TestType.FUNCTIONAL:
                gen = functional_test_pass_matrix(task, programs, unit, max_workers=self.max_workers)
                ok = [c is not None for c in functional_test_calls(unit)]
            else:
                gen = generated_test_pass_matrix(task, programs, unit, max_workers=self.max_workers)
                ok = [t.test is not None for t in unit]
            gt = torch.tensor([s.gt_passed for s in group], dtype=torch.bool).reshape(len(group), -1)
            parsed = torch.tensor(ok, dtype=torch.bool)
            out.append(
                _TaskResult(
                    tuple(s.correct for s in group),
                    tuple(s.pass_fraction for s in group),
                    unit_test_counts(gt, gen, parsed),
                    tests=len(unit),
                    unparsed=len(ok) - sum(ok),
                )
            )
        return out

    def _metrics(self, name: str, results: list[_TaskResult]) -> dict[str, float]:
        """A split's metrics from its problems' results, in problem order (the sums' order is a one-process run's)."""
        metrics = {
            f"{name}/pass@1": sum(sum(r.correct) / max(1, len(r.correct)) for r in results) / len(results),
            f"{name}/gt_pass_fraction": sum(f for r in results for f in r.pass_fractions)
            / max(1, sum(len(r.pass_fractions) for r in results)),
        }
        if self.test_writer is None:
            return metrics
        counts = UnitTestCounts()
        for r in results:
            counts = counts + r.counts  # type: ignore[operator]
        tests = sum(r.tests for r in results)
        unparsed = sum(r.unparsed for r in results) / max(1, tests)
        warn_format_failures({"test_format_failure_rate": unparsed}, where=f"evaluation of {name}")
        return {
            **metrics,
            f"{name}/ut": counts.ut_accuracy,
            f"{name}/ut_total": float(counts.ut_total),
            f"{name}/detect": counts.detect_rate,
            f"{name}/detect_total": float(counts.detect_total),
            f"{name}/test_format_failure_rate": unparsed,
        }
