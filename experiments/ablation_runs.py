"""Running the ablation's arms: warm start, the "before" evaluation, each arm's training run, seed workers.

Every run lives in its own folder under ``<results>/runs/`` and is resumable: a finished run is skipped, an
unfinished one continues from its checkpoint, and a run of another results folder with the same resolved config is
copied (``reuse_from``, :mod:`reuse`). Runs go to ``jobs`` worker processes (this script's parent, ``ablate.py``,
started again with one seed and one arm each: :class:`RunJob`); the parent only aggregates.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra import compose
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from experiments.ablation_budget import arm_seconds, plan_from_config
from experiments.ablation_results import final_eval, read_metrics
from experiments.ablation_table import LABELS
from experiments.reuse import reuse_file, reuse_run
from experiments.train import run_training
from rlanything_core.ablation import warm_start, warm_start_encoder
from rlanything_core.assembly.agent import close_shared_env_pools
from rlanything_core.assembly.eval_record import read_outcomes_iteration
from rlanything_core.files import atomic_write_text
from rlanything_core.progress import Progress

__all__ = [
    "FORWARDED",
    "REPO",
    "reused_runs",
    "RunJob",
    "WorkerError",
    "log",
    "next_ready",
    "prerequisites",
    "run_in_parallel",
    "run_jobs",
    "run_seed",
    "warm_start_policy",
    "worker_command",
]

REPO = Path(__file__).resolve().parents[1]
ABLATE = REPO / "experiments" / "ablate.py"

# Overrides of train.py that ablate.py forwards (everything else comes from the arm and the seed).
FORWARDED = (
    "iterations",
    "tasks_per_iteration",
    "group_size",
    "num_votes",
    "lam",
    "balance_judge_targets",
    "policy_band",
    "judge_band",
    "env_band",
    "max_rewrites_per_iteration",
    "optim",
    "eval",
    "setting",
    "model",
    "trainer",
    "progress",
)


def _overrides(cfg: DictConfig) -> list[str]:
    """The resolved settings every arm shares, as dotted overrides for train.py."""
    flat: list[str] = []

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), value)
        else:
            flat.append(f"++{prefix}={json.dumps(node) if not isinstance(node, str) else node}")

    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    for key in FORWARDED:
        if key == "model":
            walk("model", {k: v for k, v in container["model"].items() if k not in ("policy", "judge")})
        elif key in container:
            walk(key, container[key])
    return flat


def _setting_override(cfg: DictConfig) -> str:
    return f"+setting={cfg.setting.name}"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _finished(run_dir: Path, iterations: int) -> bool:
    """Whether a training run completed ``iterations`` and its final evaluation was recorded.

    The loop logs the final evaluation (``logs/metrics.csv``) after its last checkpoint, then ``train.run_training``
    writes that evaluation's episodes (``eval_outcomes.json``, agent settings); a run killed before both are written is
    not finished: rerunning it resumes at the last iteration, trains nothing and evaluates. A finished run needs no
    checkpoint (except as the judge of a ``step_only`` run): a results folder committed without its checkpoints,
    which are large, keeps its finished runs, and a later session aggregates them or adds the runs still missing.
    """
    final = final_eval(read_metrics(run_dir))
    if final.get("eval/iteration", -1.0) < iterations:
        return False
    if not any(k.endswith("/success_rate") for k in final):
        return True  # coding: pass rates only, no episode record
    recorded = read_outcomes_iteration(run_dir)
    return recorded is not None and recorded >= iterations


def reused_runs(cfg: DictConfig, out: Path, arms: list[str]) -> list[str]:
    """What a rerun of the ablation in ``out`` takes as it is: finished runs, runs resumed from their checkpoint and
    warm starts already made, one line each (empty for a fresh results folder)."""
    lines = [f"warm start {_shown(p)}" for p in sorted((out / "init").glob("policy_seed*.pt"))]
    for seed in (int(s) for s in cfg.seeds):
        for name in ["before", *arms]:
            run_dir = out / "runs" / f"{name}_seed{seed}"
            if name == "before" and (run_dir / "eval.json").is_file():
                lines.append(f"{LABELS[name]}, seed {seed}: finished evaluation {_shown(run_dir)}")
            elif name != "before" and _finished(run_dir, int(cfg.iterations)):
                lines.append(f"{LABELS[name]}, seed {seed}: finished run {_shown(run_dir)}")
            elif (run_dir / "checkpoints" / "last.ckpt").is_file():
                lines.append(f"{LABELS[name]}, seed {seed}: resumed from {_shown(run_dir / 'checkpoints')}")
    return lines


def _warm_start_recipe(cfg: DictConfig, seed: int) -> tuple[str, list[str]] | None:
    """The warm-start script for the configured policy family and its arguments, or None where there is none.

    The encoder scorer (``model=minilm-scorer``, the ALFWorld default) is fitted by
    ``rlanything_core.ablation.warm_start_encoder`` and the tiny policy by ``rlanything_core.ablation.warm_start``; a
    pretrained LM starts from its own weights, as the paper's base models do.
    """
    family = str(cfg.model.policy.get("_target_", ""))
    m = cfg.model.policy
    if family.endswith(".minilm_scorer"):
        return "warm_start_encoder", [
            "--seed", str(seed),
            "--trainable-layers", str(m.trainable_layers),
            "--max-state-tokens", str(m.max_state_tokens),
            "--history", str(cfg.setting.max_history_turns),  # state texts exactly as the loop renders them
            *[str(a) for a in cfg.warm_start.encoder_args],
        ]  # fmt: skip
    if family.endswith(".tiny_model_and_tokenizer"):
        return "warm_start", [
            "--seed", str(seed),
            "--hidden", str(m.hidden),
            "--layers", str(m.layers),
            "--history", str(cfg.setting.max_history_turns),  # prompts exactly as the loop renders them
            *[str(a) for a in cfg.warm_start.args],
        ]  # fmt: skip
    return None


def warm_start_policy(cfg: DictConfig, seed: int, out: Path) -> Path | None:
    """The warm-started policy of ``seed`` (cached in the results folder), or None where there is none.

    In the ALFWorld setting the encoder scorer and the tiny policy are warm-started on the hand-coded expert
    (``_warm_start_recipe``); a pretrained LM starts from its own weights.

    With ``warm_start.per_seed: false`` every seed starts from seed 0's warm start (the seeds then vary the RL runs
    only), which halves the set-up time of the CPU default.
    """
    if cfg.setting.name != "alfworld" or not cfg.warm_start.enabled:
        return None
    # a seed worker's cfg.seeds is its own seed only: its parent passes the shared seed
    seed = seed if cfg.warm_start.per_seed else int(cfg.get("warm_start_seed", cfg.seeds[0]))
    recipe = _warm_start_recipe(cfg, seed)
    if recipe is None:
        log(f"warm start: skipped (model={cfg.model.name} is a pretrained LM; warm starts are for the scorer/tiny)")
        return None
    script, argv = recipe
    target = out / "init" / f"policy_seed{seed}.pt"
    if target.is_file():
        return target
    record = target.with_suffix(".json")  # how the policy was made: what a later profile's reuse compares
    source = _reuse_root(cfg, out)
    if source is not None:
        made = source / "init" / target.name
        made_record = made.with_suffix(".json")
        if reuse_file(made, target, made_record.read_text() if made_record.is_file() else "", json.dumps(argv)):
            atomic_write_text(record, json.dumps(argv))
            log(f"warm start (seed {seed}): reused {_shown(made)} (same recipe)")
            return target
    log(f"warm start (seed {seed}): python -m rlanything_core.ablation.{script} {' '.join(argv)}")
    fit = warm_start_encoder.main if script == "warm_start_encoder" else warm_start.main
    fit([*argv, "--save", str(target)])
    _check_same_weights(target)
    atomic_write_text(record, json.dumps(argv))
    return target


def _check_same_weights(policy: Path) -> None:
    """Record the warm start's digest beside it, or, where a record is already there, check the new file matches it.

    The weights are not committed (large) but the runs made from them may be: a later session that adds runs to a
    committed results folder remakes the warm start, and its runs are comparable only if the weights are the same.
    """
    digest = _digest(policy)
    record = policy.with_suffix(".sha256")
    if record.is_file() and record.read_text().strip() != digest:
        policy.unlink()
        raise RuntimeError(
            f"{policy}: the warm start made here (sha256 {digest[:16]}) differs from the one this results folder's "
            f"runs started from ({record.read_text().strip()[:16]}, {record.name}): its runs cannot be combined with "
            "new ones; use another run_id, or delete the folder's runs/ and init/ to start it over"
        )
    atomic_write_text(record, digest)


def judge_probe_file(cfg: DictConfig, out: Path, init: Path | None) -> Path:
    """Where the planner-labelled probe steps of the runs starting from ``init`` live (all arms share them).

    The first "before" evaluation labels them (the starting policy's first evaluation episodes); every later
    evaluation scores its judge on the same steps. A ``reuse_from`` run's file is copied when its starting policy is
    the same file (then its episodes are exactly the ones this run would play).
    """
    target = out / "init" / f"judge_probe_{init.stem if init is not None else 'base'}.json"
    source = _reuse_root(cfg, out)
    if not target.is_file() and source is not None:
        # the evaluator refuses a probe labelled under other evaluation settings (the file records them)
        made_by = "base" if init is None else _digest(source / "init" / init.name)
        reuse_file(source / "init" / target.name, target, made_by, "base" if init is None else _digest(init))
    return target


def _digest(path: Path) -> str:
    """The SHA-256 of a file's bytes ("" for a missing file): which weights a record was made from."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _reuse_root(cfg: DictConfig, out: Path) -> Path | None:
    """The results folder whose identical finished runs this one reuses (``reuse_from``), if any."""
    name = cfg.get("reuse_from")
    if not name:
        return None
    root = out.parent / str(name)
    return root if root.is_dir() and root != out else None


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (shorter logs), else absolute."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _arm_config(cfg: DictConfig, arm: str, seed: int, run_dir: Path, init: Path | None, extra: list[str]) -> DictConfig:
    """The train.py config of one arm and seed: exactly what `python experiments/train.py <overrides>` would use."""
    choices = HydraConfig.get().runtime.choices
    groups = [f"{g}={choices[g]}" for g in ("model", "scale") if g in choices]
    overrides = [
        _setting_override(cfg),
        *groups,
        f"arm={arm}",
        f"seed={seed}",
        f"run_dir={run_dir}",
        *_overrides(cfg),
        *extra,
    ]
    if init is not None:
        overrides.append(f"++model.policy_init={init}")
    return compose(config_name="train", overrides=overrides)


def _train(
    cfg: DictConfig, arm: str, seed: int, out: Path, init: Path | None, *, extra: list[str], name: str | None = None
) -> Path:
    """Fit one arm for one seed in this process (resuming its checkpoint), or evaluate only (``name="before"``)."""
    run_dir = out / "runs" / f"{name or arm}_seed{seed}"
    if name is None and _finished(run_dir, int(cfg.iterations)):
        return run_dir  # finished earlier: a rerun of ablate.py resumes where it stopped (ablate.py lists them)
    if name is not None and (run_dir / "eval.json").is_file():
        return run_dir
    if (run_dir / "checkpoints" / "last.ckpt").is_file():
        log(f"{LABELS[name or arm]}, seed {seed}: resuming {_shown(run_dir)} from its last checkpoint")
    arm_cfg = _arm_config(cfg, arm, seed, run_dir, init, extra)
    source = _reuse_root(cfg, out)
    if source is not None:
        other = source / "runs" / run_dir.name
        finished = (other / "eval.json").is_file() if name else _finished(other, int(cfg.iterations))
        # the config names the warm start by path: the two files must also hold the same weights
        same_init = init is None or _digest(init) == _digest(source / "init" / init.name) != ""
        if finished and same_init and reuse_run(other, run_dir, OmegaConf.to_yaml(arm_cfg, resolve=True), source, out):
            log(f"{LABELS[name or arm]}, seed {seed}: reused {_shown(other)} (identical resolved config)")
            return run_dir
    judge = arm_cfg.arm.get("judge_checkpoint") if name is None else None
    if judge and not Path(judge).is_file():
        raise FileNotFoundError(
            f"{run_dir.name} trains on the judge in {judge}, which is not there (a results folder committed without "
            f"checkpoints keeps none): delete {Path(judge).parent.parent} to train that run again, or run "
            f"{run_dir.name} where its checkpoint is"
        )
    started = time.monotonic()
    log(f"{LABELS[name or arm]}, seed {seed}: {'evaluating' if name else 'training'} in {_shown(run_dir)}")
    run_training(arm_cfg)
    log(f"{LABELS[name or arm]}, seed {seed}: done in {(time.monotonic() - started) / 60:.1f} min")
    return run_dir


def run_seed(cfg: DictConfig, seed: int, out: Path, arms: list[str]) -> dict[str, Path]:
    """Warm start, "before" evaluation and every arm of one seed (each skipped when already complete).

    Returns:
        The run folder of "before" and of each arm, in order.
    """
    try:
        init = warm_start_policy(cfg, seed, out)
        probe = ["++eval.probe_file=" + str(judge_probe_file(cfg, out, init))]
        dirs = {"before": _train(cfg, "policy", seed, out, init, extra=["++eval_only=true", *probe], name="before")}
        for arm in arms:
            extra = ["++eval.at_start=false", *probe]
            if arm == "step_only":  # the step-wise rewards of the judge that the full arm optimized
                judge = out / "runs" / f"full_seed{seed}" / "checkpoints" / "last.ckpt"
                extra.append(f"++arm.judge_checkpoint={judge}")
            dirs[arm] = _train(cfg, arm, seed, out, init, extra=extra)
        return dirs
    finally:
        close_shared_env_pools()


class WorkerError(RuntimeError):
    """A worker process of the ablation failed; the message names its run and its log."""


@dataclass(frozen=True)
class RunJob:
    """One worker's share of an ablation: a seed's "before" evaluation (``arm="before"``) or one arm's training run."""

    seed: int
    arm: str

    @property
    def name(self) -> str:
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
    """This script's command line for one run, as a worker that only runs (or resumes, or finds finished) that run."""
    replaced = ("seeds=", "arms=", "jobs=", "setting.env_workers=", "seed_worker=", "warm_start_seed=")
    kept = [a for a in sys.argv[1:] if not a.lstrip("+").startswith(replaced)]
    arms = "[]" if job.arm == "before" else f"[{job.arm}]"  # a worker with no arm makes the "before" run only
    # Each worker steps its games in its own process: the workers already fill the cores.
    return [sys.executable, str(ABLATE), *kept, f"seeds=[{job.seed}]", f"arms={arms}", "setting.env_workers=1",
            "++seed_worker=true", f"++warm_start_seed={int(cfg.seeds[0])}"]  # fmt: skip


def run_in_parallel(cfg: DictConfig, out: Path) -> None:
    """Run every (seed, arm) in ``cfg.jobs`` worker processes at a time, echoing their progress; raise if one fails.

    The parent then finds every run complete and only aggregates. Runs, not seeds, are the unit of work: with 5 seeds
    on 2 workers a seed-per-worker schedule leaves a core idle for the last seed's whole duration, and a session cut
    short loses at most the runs in flight. On 2 cores, two single-threaded workers keep both cores busy.
    """
    arms = [str(a) for a in cfg.arms]
    plan, costs = plan_from_config(cfg, os.cpu_count() or 1)
    waiting = run_jobs([int(s) for s in cfg.seeds], arms, cost=lambda arm: arm_seconds(plan, arm, costs))
    done: set[RunJob] = set()
    running: dict[RunJob, tuple[subprocess.Popen[bytes], Path, int]] = {}
    (out / "logs").mkdir(parents=True, exist_ok=True)
    progress = Progress(len(waiting), "ablation", unit="runs", log_every=1)  # a line per run done, with the ETA
    while waiting or running:
        while len(running) < int(cfg.jobs) and (job := next_ready(waiting, done, arms)) is not None:
            waiting.remove(job)
            log = out / "logs" / f"{job.name}.log"
            with open(log, "ab") as fh:
                proc = subprocess.Popen(worker_command(cfg, job), cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
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
