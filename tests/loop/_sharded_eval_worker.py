"""One rank of tests/loop/test_sharded_evaluation.py: a TextWorld evaluation (real games, tiny models) over gloo.

``python _sharded_eval_worker.py RANK PORT RUN_DIR OUT``: builds the run as experiments/train.py does (its evaluator is
sharded), evaluates on both ranks, and rank 0 then evaluates alone with the plain collector and judge (the reference).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # experiments is a package of the repository root
sys.path.insert(0, str(REPO / "tests" / "experiments"))  # the shared run helpers (_runs)

OVERRIDES = ["eval.games=3", "eval.runs=2", "arm=full", "setting.eval_max_steps=4", "setting.eval_quest_lengths=[1,2]"]


class Counting:
    """The real collector, counting the tasks this rank plays."""

    def __init__(self, collector: Any) -> None:
        self.collector = collector
        self.tasks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collector, name)

    def collect(self, tasks: Any, **kwargs: Any) -> Any:
        self.tasks += len(tasks)
        return self.collector.collect(tasks, **kwargs)


def main(rank: int, port: int, run_dir: str, out: str) -> None:
    from _runs import FAST
    from hydra import compose, initialize_config_dir

    from rlanything_core.assembly import build_run
    from rlanything_core.assembly.agent import close_shared_env_pools
    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("train", overrides=[*FAST, f"run_dir={run_dir}", *OVERRIDES])
    from rlanything_core.lightning.process_group import ProcessGroup

    evaluator = build_run(cfg).loop.evaluator  # sharded, as the builders make it
    assert evaluator.sharded
    evaluator.collectives = ProcessGroup()  # the process group started below, not the run's (unlaunched) runtime
    counting = Counting(evaluator.collector)
    evaluator.collector = counting
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    result: dict[str, Any] = {"metrics": evaluator(), "outcomes": [vars(o) for o in evaluator.last_outcomes]}
    result["tasks_played"] = counting.tasks
    result["tasks_total"] = sum(len(s.tasks) for s in evaluator.splits)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:  # the reference: one process, the plain collector and judge
        plain = copy.copy(evaluator)
        plain.sharded = False
        plain.collector = counting.collector
        result["plain_metrics"] = plain()
        result["plain_outcomes"] = [vars(o) for o in plain.last_outcomes]
    close_shared_env_pools()
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
