"""Helper of the pool kill test.

A zygote process imports the library once, then for each ``go <seed>`` line on stdin forks a worker that loops
add-pending / save / resolve / save / ack (acknowledged accepts go to an append-only file after ``save`` returned)
until the test SIGKILLs it. Only the zygote writes to stdout, so the test reads its lines in a fixed order:
``pid <n>``, then ``ready`` once the worker has loaded the pool, then ``exit <status>`` once the worker is dead.

Why only the zygote writes: the worker used to print ``ready`` itself, on the pipe it shares with the zygote, while
the zygote printed ``pid <n>``. With ``PYTHONUNBUFFERED=1`` (set on this machine) ``print`` issues two ``write``
calls, the text and then ``"\n"``, so on a loaded machine the two processes' bytes interleaved: the test read
``pid <n>ready`` (accepted as the pid line) and then a bare ``"\n"`` where ``ready`` was expected, failed, and its
``finally`` killed the zygote but not the worker, which kept looping (the "orphaned zygote" at ~50% of a core was
this worker: same command line, parent 1). Now the worker reports readiness over a private pipe that the zygote
reads after printing ``pid``; the test kills the whole process group whatever happens, and both processes die with
their parent (``PR_SET_PDEATHSIG``), so nothing is left spinning even when the test itself is SIGKILLed.
"""

from __future__ import annotations

import os
import random
import sys
import traceback
from pathlib import Path

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.testing.processes import die_with_parent


def work(run_dir: Path, ack_path: Path, seed: int, ready_fd: int) -> None:
    rng = random.Random(seed)
    if (run_dir / "pool" / "state.json").exists():
        pool = TaskPool.load(run_dir)
    else:
        roots = [TaskSpec(task_id=f"root{i}", kind="dummy", root_id=f"root{i}", data={"i": i}) for i in range(4)]
        pool = TaskPool.create(run_dir, roots)
        pool.save()
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
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
    die_with_parent()
    run_dir, ack_path = Path(sys.argv[1]), Path(sys.argv[2])
    for line in sys.stdin:
        seed = int(line.split()[1])
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.close(read_end)
                die_with_parent()
                work(run_dir, ack_path, seed, write_end)
            except BaseException:  # noqa: BLE001 - the test reads the traceback from stderr
                traceback.print_exc()
                sys.stderr.flush()
                code = 4
            finally:
                os._exit(code)
        os.close(write_end)
        print(f"pid {pid}", flush=True)
        with os.fdopen(read_end, "rb") as ready:
            print(ready.readline().decode().strip() or "not ready", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)}", flush=True)


if __name__ == "__main__":
    main()
