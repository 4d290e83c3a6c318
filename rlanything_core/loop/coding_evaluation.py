"""Evaluation of the coding setting on held-out problems: the policy's pass@1 and the judge's UT / Detect.

pass@1 is the mean over problems of the fraction of sampled programs that pass every test (greedy samples give the
greedy pass rate). The judge writes ``K`` unit tests per problem; UT and Detect (PAPER Table 1, REFERENCE_IMPL §3.2)
are computed against the programs sampled for that problem, with their denominators logged.

Stdin problems run a generated test as stdin/expected stdout. Functional problems (LeetCode ``class Solution``) run it
as a call: the judge is asked for the call's keyword arguments as **Test Input** (the statements' own example format,
``nums = [1, 2], k = 3``) and the returned value as a Python literal as **Test Output**; the check is
``assert (entry_point)(<input>) == (<output>)``. A test that is not valid Python fails every program.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from rlanything_core.collect.coding import CodeCollector, GeneratedTest, UnitTestCollector, generated_test_pass_matrix
from rlanything_core.envs.coding.problem import TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.rewards.unit_tests import UnitTestCounts, unit_test_counts
from rlanything_core.sandbox import FunctionalTest
from rlanything_core.seeding import derive_seed

__all__ = ["CodingEvalSplit", "CodingEvaluator", "FUNCTIONAL_TEST_FORMAT", "functional_test_pass_matrix"]

FUNCTIONAL_TEST_FORMAT = (
    "\n\nFor this problem, write the **Test Input** as the call's keyword arguments in the examples' format (for "
    "example `nums = [1, 2], k = 3`) and the **Test Output** as the returned value, a Python literal."
)


@dataclass(frozen=True)
class CodingEvalSplit:
    """A named set of held-out coding tasks (``name`` prefixes the metrics)."""

    name: str
    tasks: tuple[CodingTask, ...]


def functional_test_pass_matrix(
    task: CodingTask, programs: Sequence[str | None], tests: Sequence[GeneratedTest], *, max_workers: int = 2
) -> Tensor:
    """``(C, K)`` bool for a functional problem: program ``c`` passes the call-style generated test ``k``."""
    problem = task.problem
    if problem.test_type is not TestType.FUNCTIONAL or not problem.entry_point:
        raise ValueError(f"task: expected a functional problem with an entry point, got {problem.id}")
    valid = [k for k, t in enumerate(tests) if t.test is not None]
    matrix = torch.zeros(len(programs), len(tests), dtype=torch.bool)
    rows = [c for c, p in enumerate(programs) if p is not None]
    if not valid or not rows:
        return matrix
    checks = []
    for k in valid:
        call, expected = tests[k].test  # type: ignore[misc]
        checks.append(
            FunctionalTest(f"\nassert ({problem.entry_point})({call.strip()}) == ({expected.strip()})\n",
                           time_limit_s=problem.time_limit_s, setup=problem.harness_setup,
                           program_names=problem.check_program_names)
        )
    jobs = [(problem.full_program(programs[c] or ""), checks) for c in rows]
    results = task.sandbox.run_many(jobs, judge=task.judge, max_workers=max_workers)
    for c, r in zip(rows, results):
        for k, tr in zip(valid, r.tests):
            matrix[c, k] = tr.passed
    return matrix


class CodingEvaluator:
    """Pass@1 of the policy and UT / Detect of the judge on each split.

    Args:
        coder: samples the evaluation programs (its own ``samples_per_task`` and sampling, e.g. greedy).
        splits: held-out problems.
        test_writer: the judge's unit-test writer (``None``: policy metrics only).
        seed: evaluation seed (the same samples at every evaluation when the weights are the same).
        max_workers: concurrent sandbox processes.
    """

    sharded: bool = False  # the loop.protocol.Evaluator contract: rank 0 alone calls it

    def __init__(
        self,
        coder: CodeCollector,
        splits: Sequence[CodingEvalSplit],
        *,
        test_writer: UnitTestCollector | None = None,
        seed: int = 1234,
        max_workers: int = 2,
    ) -> None:
        self.coder = coder
        self.splits = list(splits)
        self.test_writer = test_writer
        self.seed = seed
        self.max_workers = max_workers

    @torch.no_grad()
    def __call__(self) -> dict[str, float]:
        """``<split>/pass@1``, ``<split>/ut`` (+ ``ut_total``), ``<split>/detect`` (+ ``detect_total``), ...."""
        metrics: dict[str, float] = {}
        for split in self.splits:
            tasks = list(split.tasks)
            if not tasks:
                continue
            samples = self.coder.collect(tasks, seed=derive_seed(self.seed, split.name))
            per_task = [[s for s in samples if s.group_id == k] for k in range(len(tasks))]
            metrics[f"{split.name}/pass@1"] = sum(
                sum(s.correct for s in group) / max(1, len(group)) for group in per_task
            ) / len(tasks)
            metrics[f"{split.name}/gt_pass_fraction"] = sum(s.pass_fraction for s in samples) / max(1, len(samples))
            if self.test_writer is None:
                continue
            prompts = [
                CodingTask(replace(t.problem, prompt=t.problem.prompt + FUNCTIONAL_TEST_FORMAT), t.sandbox)
                if t.problem.test_type is TestType.FUNCTIONAL
                else t
                for t in tasks
            ]
            tests = self.test_writer.collect(prompts, seed=derive_seed(self.seed, split.name, "judge"))
            counts = UnitTestCounts()
            for k, task in enumerate(tasks):
                group = per_task[k]
                unit = [t for t in tests if t.group_id == k]
                programs = [s.program for s in group]
                if task.problem.test_type is TestType.FUNCTIONAL:
                    gen = functional_test_pass_matrix(task, programs, unit, max_workers=self.max_workers)
                else:
                    gen = generated_test_pass_matrix(task, programs, unit, max_workers=self.max_workers)
                gt = torch.tensor([s.gt_passed for s in group], dtype=torch.bool).reshape(len(group), -1)
                parsed = torch.tensor([t.test is not None for t in unit], dtype=torch.bool)
                counts = counts + unit_test_counts(gt, gen, parsed)
            metrics[f"{split.name}/ut"] = counts.ut_accuracy
            metrics[f"{split.name}/ut_total"] = float(counts.ut_total)
            metrics[f"{split.name}/detect"] = counts.detect_rate
            metrics[f"{split.name}/detect_total"] = float(counts.detect_total)
            metrics[f"{split.name}/test_format_failure_rate"] = sum(t.test is None for t in tests) / max(1, len(tests))
        return metrics
