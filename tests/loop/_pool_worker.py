"""One rank of tests/loop/test_pool_writer.py: the pool's writer is elected over a real gloo process group.

``python _pool_worker.py RANK PORT SHARED STALE OUT``: rank 0 works in ``SHARED``; rank 1 in ``STALE``, a copy of the
run directory taken before anything was saved (what a rank sees of shared storage whose cache serves old files). The
launcher's rank variables are removed, as under ``srun`` (no ``RANK``): a writer guessed from them would be every rank.
The adaptation's rewrites are spread over the two ranks.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch.distributed as dist

from rlanything_core.adaptation.feedback import TaskFeedback
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.lightning.process_group import ProcessGroup
from rlanything_core.loop.adaptation import EnvironmentAdaptation
from rlanything_core.loop.pool_sync import PoolSnapshots
from rlanything_core.loop.protocol import Outcomes

ROOTS = [TaskSpec(task_id=f"r{i}", kind="dummy", root_id=f"r{i}", data={"i": i}) for i in range(4)]


class Driver(PoolSnapshots):
    def __init__(self, pool: TaskPool, adaptation: EnvironmentAdaptation | None) -> None:
        self.pool = pool
        self.tasks_per_iteration = 2
        self.seed = 0
        self.adaptation = adaptation
        self.collectives = ProcessGroup()

    def sync(self, outcomes: Outcomes) -> dict[str, float]:  # the loop's adaptation stages, in its order
        plan = self.plan(outcomes)
        return self.apply(plan, self.rewrite(plan))


def _view(driver: Driver) -> dict[str, Any]:
    state = driver.pool.snapshot()["state"]
    return {"writer": driver.pool.writer, "pending": sorted(driver.pool.pending), "events": state["events"],
            "generation": state["generation"], "tasks": sorted(driver.pool.tasks)}


def main(rank: int, port: int, shared: str, stale: str, out: str) -> None:
    for var in ("RANK", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK"):
        os.environ.pop(var, None)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    run_dir = Path(shared if rank == 0 else stale)
    driver = Driver(TaskPool.create(run_dir, ROOTS, writer=False), None)  # as rlanything_core/assembly builds it
    dist.init_process_group("gloo", rank=rank, world_size=2)
    result: dict[str, Any] = {}
    driver.save_initial_pool()
    result["initial"] = _view(driver)

    rewrote: list[str] = []

    class Rewriter:  # records which requests this rank rewrote (the LLM call the ranks share)
        def rewrite(self, task: TaskSpec, direction: Any, feedback: Any) -> list[Candidate]:
            rewrote.append(task.task_id)
            new = TaskSpec(f"{task.task_id}@v1-{direction.value[0]}", "dummy", task.root_id, 1, data={"i": 10})
            return [Candidate(new, task.task_id, task.root_id, direction.value, "test", valid=True)]

    class Adaptation(EnvironmentAdaptation):  # records what the writer planned on
        def plan(self, pool: TaskPool, episodes: Any, rates: dict[str, float], **kwargs: Any) -> Any:
            assert pool.writer  # runs on the writer only
            metrics, requests = super().plan(pool, episodes, rates, **kwargs)
            seen = {"env/rates_seen": float(len(rates)), "env/items_seen": float(len(kwargs["feedback"]))}
            return {**metrics, **seen}, requests

    driver.adaptation = Adaptation(rewriter=Rewriter())

    # r0 always fails (rewrite easier), r1 always succeeds (harder), r2 and r3 too (harder): four rewrites, two ranks
    rates = {"r0": 0.0, "r3": 1.0} if rank == 0 else {"r1": 1.0, "r2": 1.0}
    feedback = [TaskFeedback(f"fb{rank}", "", 0.0, 0)]  # one critic record per rank: the writer sees both
    result["metrics"] = driver.sync(Outcomes(0, rates, feedback=feedback))
    result["rewrote"] = rewrote
    result["after_sync"] = _view(driver)
    driver.restore_pool(0)  # a resume from scratch: every rank back to the initial pool
    result["restored"] = _view(driver)

    class Broken(EnvironmentAdaptation):
        def plan(self, *args: Any, **kwargs: Any) -> Any:
            raise ValueError("the rewriter broke")

    driver.adaptation = Broken(rewriter=Rewriter())
    try:  # an error on the writer reaches every rank (no rank waits forever for the writer)
        driver.sync(Outcomes(1, rates, feedback=[]))
        result["error"] = None
    except Exception as err:  # noqa: BLE001
        result["error"] = f"{type(err).__name__}: {err}"
    result["stale_state_written"] = (Path(stale) / "pool" / "state.json").exists()
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
