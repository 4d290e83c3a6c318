"""Helper of the pool kill test.

A zygote process imports the library once, then for each ``go <seed>`` line on stdin forks a worker that loops
add-pending / save / resolve / save / ack (acknowledged accepts go to an append-only file after ``save`` returned)
until the test SIGKILLs it; the zygote reports ``pid <n>`` and, once the worker is dead, ``exit <status>``.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from rlanything_core.environment.pool import TaskPool
from rlanything_core.environment.rewriters.protocol import Candidate, TaskSpec


def work(run_dir: Path, ack_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    if (run_dir / "pool" / "state.json").exists():
        pool = TaskPool.load(run_dir)
    else:
        roots = [TaskSpec(task_id=f"root{i}", kind="dummy", root_id=f"root{i}", data={"i": i}) for i in range(4)]
        pool = TaskPool.create(run_dir, roots)
        pool.save()
    print("ready", flush=True)
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    iteration = len(pool.events)
    while True:
        iteration += 1
        free = [s for s in sorted(pool.slots) if all(p.slot_id != s for p in pool.pending.values())]
        if free:
            slot = pool.slots[rng.choice(free)]
            parent = pool.tasks[slot.active_id]
            tid = f"{parent.root_id}@v{parent.version + 1}-{os.urandom(4).hex()}"
            task = TaskSpec(task_id=tid, kind="dummy", root_id=parent.root_id, version=parent.version + 1,
                            data={"blob": "x" * rng.randint(0, 4000)})
            cand = Candidate(task, parent.task_id, parent.root_id, "harder", "dummy", valid=True)
            pool.add_candidates([cand], parent_acc=0.9, iteration=iteration)
            pool.save()
        for tid in list(pool.pending):
            decision = pool.resolve(tid, rng.choice([0.5, 0.0, 0.95]), iteration=iteration)
            pool.save()
            if decision.accepted:
                os.write(ack, f"{tid}\n".encode())
                os.fsync(ack)


def main() -> None:
    run_dir, ack_path = Path(sys.argv[1]), Path(sys.argv[2])
    for line in sys.stdin:
        seed = int(line.split()[1])
        pid = os.fork()
        if pid == 0:
            try:
                work(run_dir, ack_path, seed)
            finally:
                os._exit(3)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)}", flush=True)


if __name__ == "__main__":
    main()
