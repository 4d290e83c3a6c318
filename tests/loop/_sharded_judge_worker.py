"""One rank of tests/loop/test_sharded_judge.py: ``python _sharded_judge_worker.py RANK WORLD PORT OUT``.

Every rank holds the same episodes and calls ``sharded_judge`` on them (a stub vote sampler: the vote's text is
its seed), then writes what it got back, whether its inputs changed, and the one-process result to compare with.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rlanything_core.collect.judge import JudgeCollector  # noqa: E402
from rlanything_core.lightning.process_group import ProcessGroup  # noqa: E402
from rlanything_core.loop.sharded_evaluation import sharded_judge  # noqa: E402
from rlanything_core.records import AgentStep, Episode, JudgeSample  # noqa: E402
from rlanything_core.testing.processes import die_with_parent  # noqa: E402


class SeedVotes:
    """Vote ``+1`` on odd seeds, ``0`` (a format failure) on multiples of 3, else ``-1``; the text is the seed."""

    def __init__(self) -> None:
        self.votes = 0

    def sample(self, backend: Any, prompts: Sequence[Any], seeds: Sequence[int]) -> list[JudgeSample]:
        self.votes += len(seeds)
        return [JudgeSample(0 if s % 3 == 0 else 1 if s % 2 else -1, str(s)) for s in seeds]


def episodes(groups: Sequence[int]) -> list[Episode]:
    """One episode per entry of ``groups`` (its group id), with ``1 + n % 3`` steps; task ids count the episodes."""
    return [
        Episode(f"task{n}", g, "goal", [AgentStep(f"obs {t}", ["look"], [1], [2], [], "look", "look")
                                         for t in range(1 + n % 3)])
        for n, g in enumerate(groups)
    ]


def summary(judged: list[Episode]) -> list[list[Any]]:
    return [[e.task_id, [[v.text for v in s.judge] for s in e.steps]] for e in judged]


def main(rank: int, world: int, port: int, out: Path) -> None:
    die_with_parent()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    result: dict[str, Any] = {"rank": rank, "cases": []}
    for groups in ([3, 3, 0, 1, 1, 1, 2], [5, 5]):  # groups out of order, uneven; then fewer groups than ranks
        sampler = SeedVotes()
        given = episodes(groups)
        before = copy.deepcopy(given)
        judged, stats = sharded_judge(JudgeCollector(object(), num_votes=2, votes=sampler), given, seed=7,
                                      collectives=ProcessGroup())
        plain, plain_stats = JudgeCollector(object(), num_votes=2, votes=SeedVotes()).judge(before, seed=7)
        result["cases"].append({
            "judged": summary(judged), "stats": vars(stats), "inputs_unchanged": given == before,
            "local_votes": sampler.votes, "plain": summary(plain), "plain_stats": vars(plain_stats),
        })
    dist.barrier()
    dist.destroy_process_group()
    (out / f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
