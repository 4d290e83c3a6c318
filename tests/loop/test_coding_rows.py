"""Coding on the agent settings' seam: ``coding_rows`` (single-step episodes -> RolloutBatch -> build_rows) gives
exactly the rows of the coding driver's former row builder (kept below, verbatim, as the reference), on random
pass matrices and tokens; the stages' contract; the integrator that needs votes is refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.advantages.integrators import IntegratedIntegrator
from rlanything_core.collect.coding import CodeSample, GeneratedTest
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.coding_driver import CodingLoopDriver, Rollouts
from rlanything_core.loop.coding_rows import TaskRollouts, coding_rows, score_task
from rlanything_core.loop.protocol import source_iteration
from rlanything_core.records import GeneratedSequence
from rlanything_core.rewards.pass_fraction import PassFractionIntegrator
from rlanything_core.rewards.targets import UnitTestTargets
from rlanything_core.rewards.unit_tests import code_pass_fraction, standardize_unit_test_rewards
from rlanything_core.sandbox import Sandbox
from rlanything_core.types import TrainingRows, rows_from_records

SANDBOX = Sandbox()  # never runs here: every pass matrix is given


# ---- the former path (loop/coding_driver.py at 8003fd1: _Row, _training_rows and the row part of _score) ----
@dataclass(frozen=True)
class _Row:
    sequence: GeneratedSequence
    cell: tuple[int, int, int]
    advantage: float
    group: int


def _training_rows(rows: Sequence[_Row], pad_id: int, *, drop_zero: bool = True) -> TrainingRows | None:
    keep = [r for r in rows if r.advantage != 0.0 or not drop_zero]
    if not keep:
        return None
    return TrainingRows(
        rows_from_records([r.sequence for r in keep], [r.cell for r in keep], pad_id=pad_id),
        torch.tensor([r.advantage for r in keep], dtype=torch.float32),
        torch.tensor([r.group for r in keep], dtype=torch.int64),
    )


def _former_rows(
    tasks: Sequence[TaskRollouts], pad_id: int, targets: UnitTestTargets | None, band: tuple[float, float]
) -> tuple[TrainingRows | None, TrainingRows | None]:
    samples = [s for t in tasks for s in t.programs]
    cells = {id(s): b for b, s in enumerate(samples)}
    policy: list[_Row] = []
    judge: list[_Row] = []
    for t in tasks:
        res = score_task(t.task, t.programs, t.tests, targets=targets, gen_pass=t.scored.gen_pass)
        if band[0] <= res.pass_all_rate <= band[1]:
            advantages = standardize_unit_test_rewards(code_pass_fraction(res.gt_pass))
            policy.extend(_Row(s, (cells[id(s)], 0, -1), a, t.group) for s, a in zip(t.programs, advantages.tolist()))
        if targets is not None and res.test_advantages is not None:
            adv = res.test_advantages.tolist()
            judge.extend(_Row(x, (t.group, 0, j), a, t.group) for j, (x, a) in enumerate(zip(t.tests, adv)))
    drop_zero = targets is None or targets.drop_zero_rows
    return _training_rows(policy, pad_id), _training_rows(judge, pad_id, drop_zero=drop_zero)


# ---- random tasks ----
tokens = st.lists(st.integers(1, 50), min_size=0, max_size=5)


@st.composite
def task_rollouts(draw: Any, group: int) -> TaskRollouts:
    num_gt = draw(st.integers(1, 3))
    problem = CodingProblem(
        id=f"t{group}", source="test", prompt=f"problem {group}", test_type=TestType.STDIN,
        tests=tuple(IOTest(str(i), str(i)) for i in range(num_gt)),
    )  # fmt: skip
    task = CodingTask(problem, SANDBOX)
    num_programs = draw(st.integers(1, 5))
    programs = []
    for _ in range(num_programs):
        extracted = draw(st.booleans())
        passed = draw(st.lists(st.booleans(), min_size=num_gt, max_size=num_gt)) if extracted else [False] * num_gt
        programs.append(
            CodeSample(problem.id, 0, draw(tokens.filter(bool)), draw(tokens), [], "text",
                       "print(1)" if extracted else None, passed)
        )  # fmt: skip
    num_tests = draw(st.integers(0, 4))
    tests = tuple(
        GeneratedTest(problem.id, 0, draw(tokens.filter(bool)), draw(tokens), [], "test", ("1", "1") if ok else None)
        for ok in draw(st.lists(st.booleans(), min_size=num_tests, max_size=num_tests))
    )
    gen = torch.tensor(
        draw(st.lists(st.booleans(), min_size=num_programs * num_tests, max_size=num_programs * num_tests)),
        dtype=torch.bool,
    ).reshape(num_programs, num_tests)
    runnable = torch.tensor([p.program is not None for p in programs]).unsqueeze(1)
    parsed = torch.tensor([t.test is not None for t in tests], dtype=torch.bool).unsqueeze(0)
    # as generated_test_pass_matrix gives it: an unextracted program or an unparsed test passes nothing
    return _scored(TaskRollouts(TaskSpec(problem.id, "coding", problem.id, {}), group, task, tuple(programs), tests),
                   gen & runnable & parsed)  # fmt: skip


def _scored(task: TaskRollouts, gen_pass: torch.Tensor, targets: UnitTestTargets | None = None) -> TaskRollouts:
    """``task`` as the driver's judge stage leaves it: scored once, on the given pass matrix of its unit tests."""
    result = score_task(task.task, task.programs, task.tests, targets=targets, gen_pass=gen_pass)
    return dataclasses.replace(task, result=result)


@st.composite
def iterations(draw: Any) -> list[TaskRollouts]:
    groups = sorted(draw(st.sets(st.integers(0, 9), min_size=1, max_size=3)))
    return [draw(task_rollouts(g)) for g in groups]


targets_choice = st.one_of(
    st.none(),
    st.builds(UnitTestTargets, format_without_reference=st.booleans(), drop_zero_rows=st.booleans()),
)
bands = st.sampled_from([(0.2, 0.8), (0.0, 1.0), (0.5, 0.5), (0.25, 0.75)])


def _assert_same(new: TrainingRows | None, old: TrainingRows | None, *, index: bool) -> None:
    assert (new is None) == (old is None)
    if new is None or old is None:
        return
    assert torch.equal(new.rows.input_ids, old.rows.input_ids)
    assert torch.equal(new.rows.attention_mask, old.rows.attention_mask)
    assert torch.equal(new.rows.response_mask, old.rows.response_mask)
    assert torch.equal(new.advantages, old.advantages)  # bit for bit, not to a tolerance
    assert new.advantages.dtype == old.advantages.dtype == torch.float32
    assert torch.equal(new.group, old.group)
    if index:
        assert torch.equal(new.rows.index, old.rows.index)


@settings(max_examples=150, deadline=None)
@given(tasks=iterations(), targets=targets_choice, band=bands, pad_id=st.integers(0, 3))
def test_the_rows_equal_the_former_rows_on_random_iterations(
    tasks: list[TaskRollouts], targets: UnitTestTargets | None, band: tuple[float, float], pad_id: int
) -> None:
    tasks = [_scored(t, t.scored.gen_pass, targets) for t in tasks]  # scored with this run's targets
    data = coding_rows(
        tasks, iteration=0, pad_id=pad_id, integrator=PassFractionIntegrator(), judge_targets=targets,
        policy_band=band,
    )  # fmt: skip
    policy, judge = _former_rows(tasks, pad_id, targets, band)
    _assert_same(data.policy, policy, index=True)
    # the judge rows' cells now name their place in the batch (the task's first program), no longer (group, 0, test)
    _assert_same(data.judge, judge, index=False)
    assert data.metrics["policy_rows"] == (0 if policy is None else policy.num_rows)
    assert data.metrics["judge_rows"] == (0 if judge is None else judge.num_rows)
    assert data.metrics["rollouts"] == sum(len(t.programs) for t in tasks)


def _task(passed: list[list[bool]], tests: int = 0) -> TaskRollouts:
    problem = CodingProblem(id="p", source="test", prompt="p", test_type=TestType.STDIN,
                            tests=tuple(IOTest("1", "1") for _ in passed[0]))  # fmt: skip
    programs = tuple(CodeSample("p", 0, [1], [2, 3], [], "t", "x", row) for row in passed)
    unit = tuple(GeneratedTest("p", 0, [4], [5], [], "u", ("1", "1")) for _ in range(tests))
    return _scored(TaskRollouts(TaskSpec("p", "coding", "p", {}), 0, CodingTask(problem, SANDBOX), programs, unit),
                   torch.ones(len(passed), tests, dtype=torch.bool))  # fmt: skip


def test_the_policy_advantage_is_the_pass_fraction_z_scored_per_task() -> None:
    """Partial credit, not the outcome: programs passing 2/2, 1/2, 0/2 and 0/2 of the GT tests."""
    task = _task([[True, True], [True, False], [False, False], [False, False]])
    data = coding_rows([task], iteration=3, pad_id=0, integrator=PassFractionIntegrator(), judge_targets=None,
                       policy_band=(0.0, 1.0))  # fmt: skip
    fraction = torch.tensor([1.0, 0.5, 0.0, 0.0], dtype=torch.float64)
    z = ((fraction - fraction.mean()) / fraction.std(unbiased=False)).float()
    assert data.policy is not None and data.iteration == 3
    assert torch.equal(data.policy.advantages, z)
    assert data.judge is None and data.metrics["pass_rate"] == 0.25


def test_without_unit_tests_there_is_no_judge_row_even_with_targets() -> None:
    data = coding_rows([_task([[True], [False]])], iteration=0, pad_id=0, integrator=PassFractionIntegrator(),
                       judge_targets=UnitTestTargets(), policy_band=(0.0, 1.0))  # fmt: skip
    assert data.judge is None and data.metrics["judge_tasks"] == 0.0 and data.metrics["unit_tests"] == 0.0


def test_no_task_is_refused() -> None:
    with pytest.raises(ValueError, match="tasks: expected at least one task"):
        coding_rows([], iteration=0, pad_id=0, integrator=PassFractionIntegrator(), judge_targets=None,
                    policy_band=(0.2, 0.8))  # fmt: skip


def test_an_unscored_task_is_refused() -> None:
    """The rows read the judge stage's score: a task that skipped it is an error, not a second scoring."""
    task = dataclasses.replace(_task([[True], [False]]), result=None)
    with pytest.raises(ValueError, match="task 'p': expected a scored task"):
        coding_rows([task], iteration=0, pad_id=0, integrator=PassFractionIntegrator(), judge_targets=None,
                    policy_band=(0.2, 0.8))  # fmt: skip


def _driver(tmp_path: Any, **kwargs: Any) -> CodingLoopDriver:
    spec = TaskSpec("p", "coding", "p", data={"question": "q", "test_input": ["1"], "test_output": ["1"]})
    return CodingLoopDriver(coder=None, test_writer=None, pool=TaskPool.create(tmp_path, [spec]),  # type: ignore[arg-type]
                            adaptation=None, tasks_per_iteration=1, seed=0, pad_id=0, judge_targets=None,
                            sandbox=SANDBOX, **kwargs)  # fmt: skip


def test_an_integrator_that_needs_votes_is_refused(tmp_path: Any) -> None:
    """Coding's judge writes unit tests, it casts no votes: an integrated or step-only arm cannot run here."""
    with pytest.raises(ValueError, match="integrator: IntegratedIntegrator needs judge votes"):
        _driver(tmp_path, integrator=IntegratedIntegrator())


def test_the_stages_on_a_rank_without_tasks(tmp_path: Any) -> None:
    """No task group: the judge leaves the rollouts as they are, no row, and the adaptation still syncs the pool."""
    driver = _driver(tmp_path)
    driver.save_initial_pool()
    driver.collect = lambda iteration: Rollouts(iteration, [])  # type: ignore[method-assign]  # as on a rank without
    empty = Rollouts(2, [])
    assert driver.judge(empty) is empty
    data = source_iteration(driver, 2)  # the rows stage is not asked: the caller gives the empty iteration
    assert data.iteration == 2 and data.policy is None and data.judge is None and data.metrics["rollouts"] == 0.0
    plan = driver.plan(driver.outcomes(empty))
    assert plan.requests == [] and isinstance(driver.apply(plan, driver.rewrite(plan)), dict)
