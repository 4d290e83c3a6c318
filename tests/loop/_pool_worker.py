"""One rank of tests/loop/test_pool_writer.py: the pool's writer is elected over a real gloo process group.

``python _pool_worker.py RANK PORT SHARED STALE OUT``: rank 0 works in ``SHARED``; rank 1 in ``STALE``, a copy of the
run directory taken before anything was saved (what a rank sees of shared storage whose cache serves old files). The
launcher's rank variables are removed, as under ``srun`` (no ``RANK``): a writer guessed from them would be every rank.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch.distributed as dist

from rlanything_core.environment.pool import TaskPool
from rlanything_core.environment.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.loop.pool_sync import PoolSnapshots

ROOTS = [TaskSpec(task_id=f"r{i}", kind="dummy", root_id=f"r{i}", data={"i": i}) for i in range(4)]


class Driver(PoolSnapshots):
    def __init__(self, pool: TaskPool) -> None:
        self.pool = pool
        self.tasks_per_iteration = 2
        self.seed = 0


def _view(driver: Driver) -> dict[str, Any]:
    state = driver.pool.snapshot()["state"]
    return {"writer": driver.pool.writer, "pending": sorted(driver.pool.pending), "events": state["events"],
            "generation": state["generation"], "tasks": sorted(driver.pool.tasks)}


def main(rank: int, port: int, shared: str, stale: str, out: str) -> None:
    for var in ("RANK", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK"):
        os.environ.pop(var, None)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    run_dir = Path(shared if rank == 0 else stale)
    driver = Driver(TaskPool.create(run_dir, ROOTS, writer=False))  # as experiments/builders.py builds it
    dist.init_process_group("gloo", rank=rank, world_size=2)
    result: dict[str, Any] = {}
    driver.save_initial_pool()
    result["initial"] = _view(driver)

    def adapt(rates: dict[str, float], items: list[Any]) -> dict[str, float]:  # runs on the writer only
        assert driver.pool.writer
        parent = driver.pool.tasks["r0"]
        task = TaskSpec("r0@v1-h", "dummy", "r0", 1, data={"i": 10})
        driver.pool.add_candidates([Candidate(task, parent.task_id, parent.root_id, "harder", "test", valid=True)],
                                   parent_acc=0.5, iteration=0)
        return {"env/rates_seen": float(len(rates)), "env/items_seen": float(len(items))}

    rates = {f"r{rank}": 0.5}
    result["metrics"] = driver._sync_pool(rates, [rank], 0, adapt)
    result["after_sync"] = _view(driver)
    driver.restore_pool(0)  # a resume from scratch: every rank back to the initial pool
    result["restored"] = _view(driver)

    def broken(rates: dict[str, float], items: list[Any]) -> dict[str, float]:
        raise ValueError("the rewriter broke")

    try:  # an error on the writer reaches every rank (no rank waits forever for the writer)
        driver._sync_pool(rates, [rank], 1, broken)
        result["error"] = None
    except Exception as err:  # noqa: BLE001
        result["error"] = f"{type(err).__name__}: {err}"
    result["stale_state_written"] = (Path(stale) / "pool" / "state.json").exists()
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
