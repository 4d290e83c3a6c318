"""Single-turn coding collectors: programs from the policy, unit tests from the reward model, and their pass matrices.

In the coding setting the reward model writes unit tests (``**Test Input:**`` / ``**Test Output:**`` blocks); a test
that does not parse is kept as a format failure. Programs and tests run only in the sandbox.

Either collector can prefill its model's response (:mod:`rlanything_core.collect.prefill`): the prefill's tokens end
``prompt_token_ids`` (conditioned on, not trained), ``token_ids`` / ``logprobs`` hold the sampled continuation only,
and ``text`` is ``prefill + continuation``, the response as parsed.

On the loop's side (``loop/coding_driver.py``) every program is a one-step ``Episode`` (:func:`program_episodes`):
the rows of both models then come from the agent settings' batch object (``types.RolloutBatch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from rlanything_core.collect.prefill import (
    FENCE_CLOSE,
    CodePrefill,
    code_prefill,
    parse_scaffolded_test,
    unit_test_prefill,
)
from rlanything_core.collect.prompts import Messages, code_messages, unit_test_messages
from rlanything_core.envs.coding.extract import extract_code, parse_unit_test
from rlanything_core.envs.coding.problem import TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.generation.prompts import render_prefilled_prompt, sanitize_untrusted
from rlanything_core.generation.sampling import row_seed
from rlanything_core.generation.types import FinishReason, Prompt, SamplingParams
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.sandbox.config import StdinTest

__all__ = [
    "CodeCollector",
    "CodeSample",
    "GeneratedTest",
    "TaskGeneration",
    "UnitTestCollector",
    "generated_test_pass_matrix",
    "program_episodes",
    "sample_seeds",
]


@dataclass
class TaskGeneration:
    """One response sampled for a task (a program or a unit test): what every coding record shares.

    Attributes:
        task_id: the task it answers.
        group_id: the task's group in the collector's call (the index of its task unless ``group_ids`` were given).
        prompt_token_ids / token_ids / logprobs: the generated sequence (``records.GeneratedSequence``).
        text: prefill + continuation, the response as parsed.
    """

    task_id: str
    group_id: int
    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str


@dataclass
class CodeSample(TaskGeneration):
    """One program sampled for a task, with its ground-truth test results."""

    program: str | None
    gt_passed: list[bool] = field(default_factory=list)

    @property
    def pass_fraction(self) -> float:
        """Fraction of ground-truth tests passed (the policy's reward in the authors' code)."""
        return sum(self.gt_passed) / len(self.gt_passed) if self.gt_passed else 0.0

    @property
    def correct(self) -> bool:
        """Passes every ground-truth test."""
        return bool(self.gt_passed) and all(self.gt_passed)


@dataclass
class GeneratedTest(TaskGeneration):
    """One unit test written by the reward model (``test`` is ``None`` when ``text`` did not parse)."""

    test: tuple[str, str] | None


def _prefilled(backend: Any, messages: Messages, prefill: str) -> Prompt:
    """The chat itself without a prefill; else its token ids with the prefill's appended (the backend's tokenizer)."""
    return render_prefilled_prompt(backend.tokenizer, messages, prefill) if prefill else messages


def _group_ids(count: int, group_ids: Sequence[int] | None) -> list[int]:
    groups = list(range(count)) if group_ids is None else [int(g) for g in group_ids]
    if len(groups) != count:
        raise ValueError(f"group_ids: expected {count} ids, got {len(groups)}")
    if any(g < 0 for g in groups):
        raise ValueError(f"group_ids: expected ids >= 0, got {groups}")
    return groups


def sample_seeds(seed: int, group_ids: Sequence[int], per_group: int) -> list[int]:
    """The sampling seed of sample ``j`` of group ``g``: that of row ``g * per_group + j`` of a call with ``seed``.

    A sample's draws then depend on ``(seed, g, j)`` alone, not on which other tasks share the batch (tasks split over
    ranks sample as in one process), and a batch of groups ``0..n-1`` samples exactly as a plain call with ``seed``.
    """
    return [row_seed(seed, g * per_group + j) for g in group_ids for j in range(per_group)]


def _check_tokenizer(backend: Any, what: str) -> None:
    if getattr(backend, "tokenizer", None) is None:
        raise ValueError(f"backend: a {what} prefill renders prompts with the backend's tokenizer, and it has none")


class CodeCollector:
    """Sample ``samples_per_task`` programs per task and run them on the ground-truth tests in the sandbox.

    Args:
        backend: a generation backend (with a ``tokenizer`` when ``prefill`` is not ``NONE``).
        samples_per_task: programs per task (``G``).
        sampling: sampling parameters (the seed is set per call).
        max_workers: concurrent sandbox processes.
        prefill: how the response begins (:class:`~rlanything_core.collect.prefill.CodePrefill`); with a prefill the
            prompt asks for the code block only, and generation stops at the block's closing fence (nothing after it
            is read: with no stop strings of its own in ``sampling``, the fence is restored in ``text``).
    """

    def __init__(
        self,
        backend: Any,
        *,
        samples_per_task: int = 8,
        sampling: SamplingParams | None = None,
        max_workers: int = 2,
        prefill: CodePrefill | str = CodePrefill.NONE,
    ) -> None:
        if samples_per_task < 1:
            raise ValueError(f"samples_per_task: expected >= 1, got {samples_per_task}")
        code_prefill(prefill)  # validates the mode
        self.prefill = CodePrefill(prefill)
        if self.prefill is not CodePrefill.NONE:
            _check_tokenizer(backend, "code")
        self.backend = backend
        self.samples_per_task = samples_per_task
        self.sampling = sampling or SamplingParams(max_new_tokens=512, temperature=1.0)
        self.max_workers = max_workers

    def collect(
        self, tasks: Sequence[CodingTask], *, seed: int, group_ids: Sequence[int] | None = None
    ) -> list[CodeSample]:
        """Sample and check programs; those of ``tasks[k]`` get ``group_id = group_ids[k]`` (default ``k``).

        Unparseable responses fail every test. Sample ``j`` of group ``g`` is seeded by :func:`sample_seeds`
        (``seed``, ``g``, ``j``): it does not depend on the other tasks of the call.
        """
        groups = _group_ids(len(tasks), group_ids)
        think = self.prefill is CodePrefill.NONE
        prefills = [code_prefill(self.prefill, starter_code=t.problem.starter_code) for t in tasks]
        chats = [
            code_messages(
                t.problem.prompt,
                stdin_io=t.problem.test_type == TestType.STDIN,
                starter_code=t.problem.starter_code,
                think=think,
            )
            for t in tasks
        ]
        prompts = [
            _prefilled(self.backend, chat, prefill)
            for chat, prefill in zip(chats, prefills)
            for _ in range(self.samples_per_task)
        ]
        sampling = replace(self.sampling, seed=seed)
        if not think:
            sampling = replace(sampling, stop=(*sampling.stop, FENCE_CLOSE))
        generations = self.backend.generate(
            prompts, sampling, seeds=sample_seeds(seed, groups, self.samples_per_task)
        )
        samples = []
        for n, gen in enumerate(generations):
            k = n // self.samples_per_task
            closed = not think and not self.sampling.stop and gen.finish_reason is FinishReason.STOP_STRING
            text = prefills[k] + gen.text + (FENCE_CLOSE if closed else "")
            samples.append(
                CodeSample(
                    tasks[k].problem.id,
                    groups[k],
                    gen.prompt_token_ids,
                    gen.token_ids,
                    gen.logprobs,
                    text,
                    extract_code(text),
                )
            )
        for k, task in enumerate(tasks):
            group = samples[k * self.samples_per_task : (k + 1) * self.samples_per_task]
            runnable = [s for s in group if s.program is not None]
            results = task.evaluate_many(
                [s.program for s in runnable if s.program is not None], max_workers=self.max_workers
            )
            for s, r in zip(runnable, results):
                s.gt_passed = [t.passed for t in r.tests]
            for s in group:
                if s.program is None:
                    s.gt_passed = [False] * len(task.tests)
        return samples


class UnitTestCollector:
    """Sample ``tests_per_task`` unit tests per (stdin) task from the reward model.

    Args:
        backend: a generation backend (with a ``tokenizer`` when ``scaffold``).
        tests_per_task: unit tests per task (``K``).
        sampling: sampling parameters (the seed is set per call).
        scaffold: prefill each response with the format's opening
            (:data:`~rlanything_core.collect.prefill.UNIT_TEST_SCAFFOLD`): the model writes the test's contents only,
            read by :func:`~rlanything_core.collect.prefill.parse_scaffolded_test`; ``False``: free-form responses
            read by :func:`~rlanything_core.envs.coding.extract.parse_unit_test`.
    """

    def __init__(
        self,
        backend: Any,
        *,
        tests_per_task: int = 8,
        sampling: SamplingParams | None = None,
        scaffold: bool = False,
    ) -> None:
        if tests_per_task < 1:
            raise ValueError(f"tests_per_task: expected >= 1, got {tests_per_task}")
        if scaffold:
            _check_tokenizer(backend, "unit-test")
        self.scaffold = bool(scaffold)
        self.backend = backend
        self.tests_per_task = tests_per_task
        self.sampling = sampling or SamplingParams(max_new_tokens=512, temperature=0.8)

    def collect(
        self, tasks: Sequence[CodingTask], *, seed: int, group_ids: Sequence[int] | None = None
    ) -> list[GeneratedTest]:
        """Sample unit tests; those of ``tasks[k]`` get ``group_id = group_ids[k]`` (default ``k``).

        An unparseable output has ``test = None``. Test ``j`` of group ``g`` is seeded by :func:`sample_seeds`
        (``seed``, ``g``, ``j``): it does not depend on the other tasks of the call.
        """
        groups = _group_ids(len(tasks), group_ids)
        tokenizer = getattr(self.backend, "tokenizer", None)

        def sanitize(text: str) -> str:
            return sanitize_untrusted(text, tokenizer) if tokenizer is not None else text

        prefill = unit_test_prefill(self.scaffold)
        parse = parse_scaffolded_test if self.scaffold else parse_unit_test
        chats = [unit_test_messages(t.problem.prompt, sanitize=sanitize, scaffold=self.scaffold) for t in tasks]
        prompts = [_prefilled(self.backend, chat, prefill) for chat in chats for _ in range(self.tests_per_task)]
        generations = self.backend.generate(
            prompts, replace(self.sampling, seed=seed), seeds=sample_seeds(seed, groups, self.tests_per_task)
        )
        return [
            GeneratedTest(
                tasks[n // self.tests_per_task].problem.id,
                groups[n // self.tests_per_task],
                g.prompt_token_ids,
                g.token_ids,
                g.logprobs,
                prefill + g.text,
                parse(prefill + g.text),
            )
            for n, g in enumerate(generations)
        ]


def generated_test_pass_matrix(
    task: CodingTask, programs: Sequence[str | None], tests: Sequence[GeneratedTest], *, max_workers: int = 2
) -> Tensor:
    """``(C, K)`` bool: program ``c`` passes generated test ``k`` (an unparseable test or program passes nothing)."""
    valid = [k for k, t in enumerate(tests) if t.test is not None]
    matrix = torch.zeros(len(programs), len(tests), dtype=torch.bool)
    if not valid:
        return matrix
    sandbox_tests = [StdinTest(stdin=tests[k].test[0], expected=tests[k].test[1]) for k in valid]  # type: ignore[index]
    rows = [c for c, p in enumerate(programs) if p is not None]
    jobs = [(task.problem.full_program(programs[c] or ""), sandbox_tests) for c in rows]
    results = task.sandbox.run_many(jobs, judge=task.judge, max_workers=max_workers)
    for c, r in zip(rows, results):
        for k, tr in zip(valid, r.tests):
            matrix[c, k] = tr.passed
    return matrix


def program_episodes(
    programs: Sequence[CodeSample], tests: Sequence[GeneratedTest], *, group: int, goal: str
) -> list[Episode]:
    """One task's programs as one-step episodes, in order; its unit tests are the judge samples of the first one.

    Episode ``n`` holds program ``n`` as its only step (its prompt and response tokens); it is won when the program
    passes every GT test (outcome ``+1``, else ``-1``). A unit test judges the task, not one program, so the task's
    tests sit once, on the first episode's step, in order: ``types.judge_rows`` then makes one judge row
    per test, each in the task's group. A test is no vote: its ``vote`` is 0, and the grid's vote cells serve only to
    place the judge rows (the coding targets are ``rewards.UnitTestTargets``, never the votes).

    Args:
        programs: the task's programs (``CodeSample``; ``gt_passed`` filled by ``CodeCollector.collect``).
        tests: the task's unit tests from the judge (may be empty).
        group: the task's group index in the iteration (the episodes' ``group_id``).
        goal: the task's statement (the episodes' ``goal``).

    Raises:
        ValueError: tests without any program to carry them.
    """
    if tests and not programs:
        raise ValueError(f"programs: expected at least one program to carry the {len(tests)} unit tests, got none")
    episodes = []
    for n, program in enumerate(programs):
        judged = [JudgeSample(0, t.text, list(t.prompt_token_ids), list(t.token_ids), list(t.logprobs)) for t in tests]
        step = AgentStep(
            observation=goal,
            admissible_actions=[],
            prompt_token_ids=list(program.prompt_token_ids),
            token_ids=list(program.token_ids),
            logprobs=list(program.logprobs),
            response=program.text,
            action=program.program or "",
            action_parse_failed=program.program is None,
            judge=judged if n == 0 else [],
        )
        episodes.append(Episode(program.task_id, group, goal, [step], won=program.correct))
    return episodes
