"""The data side of one RLAnything iteration in the coding setting (arXiv 2602.02488; Open-AgentRL's coding loop).

The driver gives the stages the loop calls (``collect``, ``judge``, ``rows``, ``outcomes``; ``loop/protocol.py``)::

    collect: pool.sample(k) + pending rewrites -> this rank's tasks -> G programs each (CodeCollector, GT tests run)
    judge:   K unit tests per task from the judge (UnitTestCollector) -> pass matrix of programs x tests (sandbox)
             -> each task scored once (loop.coding_rows.score_task: its TaskResult, read by rows and adapt)
    rows:    every program a one-step Episode (collect.coding.program_episodes) -> RolloutBatch
             -> step reward R = GT pass fraction (B, 1) -> PassFractionIntegrator (z-scored per task)
             -> unit-test targets (rewards.UnitTestTargets) of tasks with >= 1 correct program (optionally every
                task, for the tests' format alone) -> loop.iteration.build_rows -> IterationData
    outcomes: pass-all rates and coding critic feedback -> the loop's plan / rewrite / apply (loop.pool_sync)

The scoring and the rows are ``loop/coding_rows.py``. The seam with the agent settings is
``loop.iteration.build_rows`` (the *step-reward seam*): the same batch object (``RolloutBatch``), the same integrator
interface (``advantages.integrators.Integrator``) and the same row selection; what coding brings is its scorer: the
sandbox's pass matrices give the step reward (the GT pass fraction, where the agent settings' ``StepReward`` gives
``O + lam * mean(votes)``) and the judge's targets (``UnitTestTargets``, where they have ``ConsistencyTargets``). A
program's outcome is ``+1`` if it passes every GT test, else ``-1`` (the ``pass_rate`` metric; the task's pass-all
rate decides the policy band); its rows' ``group`` is the task's global index. The task's unit tests are the judge
samples of its first program's step (one judge row per test).
"""

from __future__ import annotations

import dataclasses

from rlanything_core.adaptation.feedback import TaskFeedback, coding_feedback
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.adaptation import EnvironmentAdaptation
from rlanything_core.loop.coding_rows import TaskRollouts, coding_rows, score_task
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.pool_sync import PoolSnapshots
from rlanything_core.loop.protocol import Outcomes, Rollouts
from rlanything_core.rewards.pass_fraction import PassFractionIntegrator
from rlanything_core.rewards.targets import UnitTestTargets
from rlanything_core.sandbox import Sandbox
from rlanything_core.seeding import derive_seed

__all__ = ["CodingLoopDriver", "coding_spec", "coding_task_from_spec"]


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


class CodingLoopDriver(PoolSnapshots):
    """The coding setting's iteration source: its stages, in order, keep the task pool in step with the checkpoints.

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
        integrator: the policy's advantages from the GT pass fractions (default ``PassFractionIntegrator()``, the
            authors' per-task z-score); one that needs judge votes is refused (coding's judge writes tests).

    Raises:
        ValueError: a bad count or band, or an integrator that needs votes.
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
        integrator: Integrator | None = None,
    ) -> None:
        if tasks_per_iteration < 1:
            raise ValueError(f"tasks_per_iteration: expected >= 1, got {tasks_per_iteration}")
        low, high = policy_band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"policy_band: expected 0 <= low <= high <= 1, got {policy_band}")
        integrator = integrator if integrator is not None else PassFractionIntegrator()
        if integrator.needs_votes:
            raise ValueError(
                f"integrator: {type(integrator).__name__} needs judge votes, and the coding judge writes unit tests "
                "instead; use rewards.pass_fraction.PassFractionIntegrator"
            )
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
        self.integrator = integrator

    def collect(self, iteration: int, /) -> Rollouts[TaskRollouts]:
        """This rank's tasks and their ``G`` programs each (GT tests run); none where the rank has no task group."""
        specs = self.tasks_for(iteration)
        mine = self.my_groups(len(specs))
        if not mine:  # more ranks than task groups: nothing to sample; still in the pool sync and the update
            return Rollouts(iteration, [])
        tasks = [coding_task_from_spec(specs[g], self.sandbox) for g in mine]
        samples = self.coder.collect(tasks, seed=derive_seed(self.seed, iteration))
        return Rollouts(
            iteration,
            [
                TaskRollouts(specs[g], g, task, tuple(s for s in samples if s.group_id == k))
                for k, (g, task) in enumerate(zip(mine, tasks))
            ],
        )

    def judge(self, rollouts: Rollouts[TaskRollouts], /) -> Rollouts[TaskRollouts]:
        """The judge's unit tests, run in the sandbox, then every task scored once (its ``TaskResult``).

        ``K`` tests per task (none without a judge) run on the task's programs; ``score_task`` gives the result that
        ``rows`` and ``adapt`` both read, so no task is scored twice in an iteration.
        """
        if not rollouts.episodes:
            return rollouts
        tasks: list[TaskRollouts] = rollouts.episodes
        tests = []
        if self.test_writer is not None:
            seed = derive_seed(self.seed, rollouts.iteration, "judge")
            tests = self.test_writer.collect([t.task for t in tasks], seed=seed)
        scored = []
        for k, t in enumerate(tasks):
            unit = tuple(x for x in tests if x.group_id == k)
            result = score_task(t.task, t.programs, unit, max_workers=self.max_workers, targets=self.judge_targets)
            scored.append(dataclasses.replace(t, tests=unit, result=result))
        return Rollouts(rollouts.iteration, scored, dict(rollouts.metrics))

    def rows(self, rollouts: Rollouts[TaskRollouts], /) -> IterationData:
        """Both models' rows of the scored tasks (``coding_rows``)."""
        return coding_rows(
            rollouts.episodes,
            iteration=rollouts.iteration,
            pad_id=self.pad_id,
            integrator=self.integrator,
            judge_targets=self.judge_targets,
            policy_band=self.policy_band,
        )

    def outcomes(self, rollouts: Rollouts[TaskRollouts], /) -> Outcomes:
        """This rank's pass-all rate of each task and its coding critic feedback (per-test pass rates)."""
        rates: dict[str, float] = {}
        feedback: list[TaskFeedback] = []
        for t in rollouts.episodes:
            res = t.scored
            rates[t.spec.task_id] = res.pass_all_rate
            valid_cols = res.parsed.nonzero().squeeze(1)
            gen = res.gen_pass[:, valid_cols].tolist()
            feedback.append(coding_feedback(t.spec.task_id, t.task.problem.prompt[:200], res.gt_pass.tolist(), gen))
        return Outcomes(rollouts.iteration, rates, feedback=feedback)
