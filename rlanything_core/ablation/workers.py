"""The ablation's seed workers: every (seed, arm) run in its own process, ``jobs`` at a time.

A worker is the ablation app started again (``python -m rlanything_core.ablation``) with one seed and one arm
(:class:`RunJob`), which only runs, resumes or finds finished that run; the parent echoes the workers' progress lines
and, once all are done, finds every run complete and only aggregates.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from rlanything_core.ablation.budget import arm_seconds, plan_from_config
from rlanything_core.ablation.runs import base_dir, run_complete
from rlanything_core.progress import Progress

__all__ = ["RunJob", "WorkerError", "next_ready", "prerequisites", "run_in_parallel", "run_jobs", "worker_command"]

APP = "rlanything_core.ablation"
"""The module a worker runs (``python -m``): the ablation app, from the same package as the parent."""


class WorkerError(RuntimeError):
    """A worker process of the ablation failed; the message names its run and its log."""


@dataclass(frozen=True)
class RunJob:
    """One worker's share of an ablation: a seed's "before" evaluation (``arm="before"``) or one arm's training run."""

    seed: int
    arm: str

    @property
    def name(self) -> str:
        """The run's folder name, ``<arm>_seed<seed>``."""
        return f"{self.arm}_seed{self.seed}"


def run_jobs(seeds: list[int], arms: list[str], cost: Callable[[str], float] | None = None) -> list[RunJob]:
    """Every run of the ablation in start order: seed by seed (so whole seeds finish early), "before" first.

    Within a seed the costliest arm (by ``cost``, seconds of one run: the budget's estimate) starts first, so that the
    last run of the ablation is a short one: with the slowest arm last, one worker ran the last seed's full arm alone
    while the other had nothing left. Without ``cost`` the arms keep their given order.
    """
    ordered = sorted(arms, key=lambda arm: -cost(arm)) if cost is not None else arms  # stable: ties keep their order
    return [RunJob(seed, arm) for seed in seeds for arm in ["before", *ordered]]


def prerequisites(job: RunJob, arms: list[str]) -> set[RunJob]:
    """The runs that must be finished before ``job`` starts.

    An arm starts from its seed's evaluated start (the "before" run labels the judge's probe steps and owns the seed's
    first evaluation); ``step_only`` trains on the ``full`` arm's optimized judge (its last checkpoint).
    """
    if job.arm == "before":
        return set()
    needed = {RunJob(job.seed, "before")}
    if job.arm == "step_only" and "full" in arms:
        needed.add(RunJob(job.seed, "full"))
    return needed


def next_ready(waiting: list[RunJob], done: set[RunJob], arms: list[str]) -> RunJob | None:
    """The first waiting job whose prerequisites are all done, or None while every one still waits on a running one."""
    return next((job for job in waiting if prerequisites(job, arms) <= done), None)


def worker_command(cfg: DictConfig, job: RunJob) -> list[str]:
    """The ablation's command line for one run, as a worker that only runs (or resumes, or finds finished) that run.

    The parent's own overrides (``sys.argv[1:]``, as Hydra read them) are kept, except those the worker sets.
    """
    replaced = ("seeds=", "arms=", "jobs=", "setting.env_workers=", "seed_worker=")
    kept = [a for a in sys.argv[1:] if not a.lstrip("+").startswith(replaced)]
    arms = "[]" if job.arm == "before" else f"[{job.arm}]"  # a worker with no arm makes the "before" run only
    # Each worker steps its games in its own process: the workers already fill the cores.
    return [sys.executable, "-m", APP, *kept, f"seeds=[{job.seed}]", f"arms={arms}", "setting.env_workers=1",
            "++seed_worker=true"]  # fmt: skip


def run_in_parallel(cfg: DictConfig, out: Path) -> None:
    """Run every (seed, arm) in ``cfg.jobs`` worker processes at a time, echoing their progress; raise if one fails.

    The parent then finds every run complete and only aggregates. Runs, not seeds, are the unit of work: with 5 seeds
    on 2 workers a seed-per-worker schedule leaves a core idle for the last seed's whole duration, and a session cut
    short loses at most the runs in flight. On 2 cores, two single-threaded workers keep both cores busy.
    """
    arms = [str(a) for a in cfg.arms]
    plan, costs = plan_from_config(cfg, os.cpu_count() or 1)
    jobs = run_jobs([int(s) for s in cfg.seeds], arms, cost=lambda arm: arm_seconds(plan, arm, costs))
    # runs a resumed ablation finds complete need no worker, and count as done, not in the pace (the ETA)
    done = {job for job in jobs if run_complete(out / "runs" / job.name, job.arm, int(cfg.iterations))}
    waiting = [job for job in jobs if job not in done]
    running: dict[RunJob, tuple[subprocess.Popen[bytes], Path, int]] = {}
    (out / "logs").mkdir(parents=True, exist_ok=True)
    progress = Progress(len(jobs), "ablation", unit="runs", initial=len(done), log_every=1)  # a line per run, ETA
    while waiting or running:
        while len(running) < int(cfg.jobs) and (job := next_ready(waiting, done, arms)) is not None:
            waiting.remove(job)
            log = out / "logs" / f"{job.name}.log"
            with open(log, "ab") as fh:
                proc = subprocess.Popen(worker_command(cfg, job), cwd=base_dir(), stdout=fh, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
            running[job] = (proc, log, log.stat().st_size)
        time.sleep(2.0)
        for job, (proc, log, offset) in list(running.items()):
            with open(log, "rb") as fh:
                fh.seek(offset)
                new = fh.read()
            running[job] = (proc, log, offset + len(new))
            for line in new.decode(errors="replace").splitlines():
                if line.startswith("[") and "] " in line[:12]:  # the workers' progress lines (see log)
                    print(f"seed {job.seed} {line}", flush=True)
            if proc.poll() is not None:
                del running[job]
                if proc.returncode != 0:
                    for other, _, _ in running.values():
                        other.terminate()
                    raise WorkerError(f"the worker of {job.name} failed (exit {proc.returncode}); see {log}")
                done.add(job)
                progress.update()
    progress.close()
