"""One rank of tests/loop/test_coding_sharded_evaluation.py: the coding evaluation over two gloo ranks.

``python _coding_sharded_eval_worker.py RANK PORT OUT``: builds two sharded ``CodingEvaluator``s (the tiny random
model on real problems; seeded scripted programs and tests on an a + b problem, so that pass@1, UT and Detect are not
all zero), evaluates on both ranks, then rank 0 evaluates again alone, outside the process group (the reference).
Each rank records the problems its coder and test writer were given and the programs sampled for them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch.distributed as dist

from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
from rlanything_core.envs.coding.loaders import load_codecontests
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.generation.sampling import prompt_seeds
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import FinishReason, Generation, SamplingParams
from rlanything_core.lightning.process_group import ProcessGroup
from rlanything_core.loop.coding_evaluation import CodingEvalSplit, CodingEvaluator
from rlanything_core.models.tiny import tiny_model_and_tokenizer
from rlanything_core.sandbox import Sandbox

GOOD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
BAD = "```python\na, b = map(int, input().split())\nprint(a - b)\n```"
TESTS = [
    "**Test Input:**\n```\n2 5\n```\n**Test Output:**\n```\n7\n```\n",
    "**Test Input:**\n```\n4 0\n```\n**Test Output:**\n```\n4\n```\n",
    "**Test Input:**\n```\n1 1\n```\n**Test Output:**\n```\n0\n```\n",
    "I cannot write a test.",
]


class SeededScripted:
    """Writes ``responses[s % len(responses)]`` for a prompt sampled with seed ``s`` (the backend's own per-prompt
    seeds), as a model that can write correct code would pick among answers; tokens from the real tokenizer."""

    def __init__(self, tokenizer: Any, responses: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.responses = list(responses)

    def generate(self, prompts: Sequence[Any], params: SamplingParams, *, seeds: Any = None) -> list[Generation]:
        out = []
        for seed in prompt_seeds(params.seed, len(prompts), seeds):
            text = self.responses[seed % len(self.responses)]
            toks = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            out.append(Generation([1], list(toks), [-1.0] * len(toks), text, FinishReason.EOS))
        return out


class Recording:
    """The real collector, recording the problems this rank was given and what was sampled for them."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.groups: list[int] = []
        self.samples: dict[str, list[int]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collector, name)

    def collect(self, tasks: Any, **kwargs: Any) -> Any:
        out = self.collector.collect(tasks, **kwargs)
        self.groups.extend(kwargs.get("group_ids") or range(len(tasks)))
        counts: dict[int, int] = {}
        for s in out:
            j = counts[s.group_id] = counts.get(s.group_id, -1) + 1
            self.samples[f"{s.group_id}/{j}"] = s.token_ids
        return out


def _add_problem(n: int) -> CodingProblem:
    tests = (IOTest("1 2\n", "3"), IOTest(f"{n} 4\n", str(n + 4)))
    return CodingProblem(f"add/{n}", "test", "Read two integers a and b and print a + b.", TestType.STDIN, tests)


def evaluators(sandbox: Sandbox) -> dict[str, CodingEvaluator]:
    model, tok = tiny_model_and_tokenizer(seed=0)
    backend = TransformersBackend(model, tok, batch_size=8)
    params = SamplingParams(max_new_tokens=12, temperature=1.0)
    problems = sorted(load_codecontests(), key=lambda p: len(p.prompt))[:3]
    tiny = CodingEvaluator(
        Recording(CodeCollector(backend, samples_per_task=2, sampling=params)),
        [CodingEvalSplit("cc", tuple(CodingTask(p, sandbox, max_tests=2) for p in problems))],
        test_writer=Recording(UnitTestCollector(backend, tests_per_task=2, sampling=params)),
        seed=7, sharded=True,
    )  # fmt: skip
    scripted = CodingEvaluator(
        Recording(CodeCollector(SeededScripted(tok, [GOOD, BAD, "no code"]), samples_per_task=4)),
        [CodingEvalSplit("add", tuple(CodingTask(_add_problem(n), sandbox) for n in range(5))),
         CodingEvalSplit("one", (CodingTask(_add_problem(9), sandbox),))],  # fewer problems than ranks
        test_writer=Recording(UnitTestCollector(SeededScripted(tok, TESTS), tests_per_task=4)),
        seed=3, sharded=True,
    )  # fmt: skip
    return {"tiny": tiny, "scripted": scripted}


def _run(evaluator: CodingEvaluator) -> dict[str, Any]:
    metrics = evaluator()
    coder, writer = evaluator.coder, evaluator.test_writer
    out = {"metrics": metrics, "groups": coder.groups, "samples": coder.samples, "test_groups": writer.groups}
    coder.groups, coder.samples, writer.groups = [], {}, []  # type: ignore[union-attr]
    return out


def main(rank: int, port: int, out: str) -> None:
    sandbox = Sandbox()
    built = evaluators(sandbox)
    for evaluator in built.values():
        evaluator.collectives = ProcessGroup()  # the process group started below (one rank once it is destroyed)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    result: dict[str, Any] = {name: _run(e) for name, e in built.items()}
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:  # the reference: one process, the same evaluators
        result["plain"] = {name: _run(e) for name, e in built.items()}
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
