"""The coding collectors seed each sample by its task's group id and its index, not by its place in the batch.

A sharded coding evaluation gives every rank a share of the problems; it equals the one-process evaluation
only if a problem's programs and unit tests are the same whichever other problems share the call. Real tiny model,
real sampling (temperature 1), real problems.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlanything_core.collect.coding import CodeCollector, UnitTestCollector, sample_seeds
from rlanything_core.envs.coding.loaders import load_codecontests
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.generation.sampling import prompt_seeds
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import SamplingParams
from rlanything_core.models.tiny import tiny_model_and_tokenizer

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "coding"
PARAMS = SamplingParams(max_new_tokens=12, temperature=1.0)


@pytest.fixture(scope="module")
def backend() -> TransformersBackend:
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    return TransformersBackend(model, tokenizer, batch_size=16)


@pytest.fixture(scope="module")
def tasks() -> list[CodingTask]:
    if not (SHARED / "codecontests_test" / "problems.jsonl").is_file():
        pytest.skip(f"no coding data under {SHARED}")
    problems = sorted(load_codecontests(), key=lambda p: len(p.prompt))[:3]
    return [CodingTask(p, max_tests=1) for p in problems]


def _tokens(items: list[Any]) -> list[tuple[int, list[int]]]:
    return [(x.group_id, x.token_ids) for x in items]


def test_a_tasks_programs_do_not_depend_on_the_other_tasks(backend: TransformersBackend,
                                                            tasks: list[CodingTask]) -> None:
    coder = CodeCollector(backend, samples_per_task=3, sampling=PARAMS)
    both = coder.collect(tasks[:2], seed=5)
    alone = coder.collect(tasks[1:2], seed=5, group_ids=[1])
    assert _tokens(both[3:]) == _tokens(alone)
    assert [s.text for s in both[3:]] == [s.text for s in alone]
    assert len({tuple(s.token_ids) for s in both}) > 1  # really sampled: the comparison is not between constants
    # group 1 put first, after another group: still the same samples
    swapped = coder.collect([tasks[1], tasks[2]], seed=5, group_ids=[1, 2])
    assert _tokens(swapped[:3]) == _tokens(alone)


def test_a_tasks_unit_tests_do_not_depend_on_the_other_tasks(backend: TransformersBackend,
                                                              tasks: list[CodingTask]) -> None:
    writer = UnitTestCollector(backend, tests_per_task=2, sampling=PARAMS)
    both = writer.collect(tasks, seed=9)
    alone = writer.collect([tasks[2]], seed=9, group_ids=[2])
    assert _tokens(both[4:]) == _tokens(alone) and [t.text for t in both[4:]] == [t.text for t in alone]


def test_default_group_ids_sample_as_one_plain_backend_call(backend: TransformersBackend,
                                                            tasks: list[CodingTask]) -> None:
    # without group ids the samples are those of before explicit seeds: the backend's own per-row seeding
    assert sample_seeds(5, [0, 1, 2], 3) == prompt_seeds(5, 9)
    coder = CodeCollector(backend, samples_per_task=3, sampling=PARAMS)
    samples = coder.collect(tasks, seed=5)
    from rlanything_core.collect.prompts import code_messages

    chats = [code_messages(t.problem.prompt, stdin_io=True, starter_code=t.problem.starter_code, think=True)
             for t in tasks for _ in range(3)]
    plain = backend.generate(chats, replace(PARAMS, seed=5))
    assert [s.token_ids for s in samples] == [g.token_ids for g in plain]


def test_group_ids_are_checked(backend: TransformersBackend, tasks: list[CodingTask]) -> None:
    coder = CodeCollector(backend, samples_per_task=1, sampling=PARAMS)
    with pytest.raises(ValueError, match="group_ids"):
        coder.collect(tasks[:2], seed=0, group_ids=[0])
    with pytest.raises(ValueError, match="group_ids"):
        UnitTestCollector(backend, tests_per_task=1, sampling=PARAMS).collect(tasks[:1], seed=0, group_ids=[-1])
    with pytest.raises(ValueError, match="seeds"):
        backend.generate([[1, 2, 3]], PARAMS, seeds=[1, 2])
