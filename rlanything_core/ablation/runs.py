"""Running the ablation's arms: warm start, the "before" evaluation, each arm's training run.

Every run lives in its own folder under ``<results>/runs/`` and is resumable: a finished run is skipped, an
unfinished one continues from its checkpoint, and a run of another results folder with the same resolved config is
copied (``reuse_from``, :mod:`~rlanything_core.ablation.reuse`). With ``jobs > 1`` the runs go to worker processes
(:mod:`~rlanything_core.ablation.workers`); the parent only aggregates.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from rlanything_core.ablation import warm_start, warm_start_encoder
from rlanything_core.ablation.reuse import reuse_file, reuse_run
from rlanything_core.analysis.results import final_eval, read_metrics
from rlanything_core.analysis.table import LABELS
from rlanything_core.assembly.agent import close_shared_env_pools
from rlanything_core.assembly.eval_record import read_outcomes_iteration
from rlanything_core.assembly.train_app import run_training
from rlanything_core.data_dir import checkout_root
from rlanything_core.files import atomic_write_text

__all__ = [
    "FORWARDED",
    "base_dir",
    "judge_probe_file",
    "log",
    "model_overrides",
    "reused_runs",
    "run_complete",
    "run_seed",
    "warm_start_policy",
]

# Overrides of the training app that the ablation forwards (everything else comes from the arm and the seed).
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


MODEL_PARTS = ("model.policy.", "model.judge.")
"""The two models' own keys: not forwarded resolved (their seeds follow each run's seed), so an override of them on the
ablation's command line reaches the arms as it was given (:func:`model_overrides`)."""


def model_overrides(task: Sequence[str]) -> list[str]:
    """The overrides in ``task`` (the command line's, as Hydra read them) of the policy's or the judge's own keys.

    ``model.policy.bucket_rows=0`` given to the ablation reaches every arm this way; before, such an override was
    dropped without a word and every run ran with the config's value.
    """
    return [o for o in task if o.lstrip("+~").startswith(MODEL_PARTS)]


def _setting_override(cfg: DictConfig) -> str:
    return f"+setting={cfg.setting.name}"


def base_dir() -> Path:
    """What an ablation's relative paths (``results_root``, ``reference_root``) are taken from.

    The checkout when the package runs from one (:func:`~rlanything_core.data_dir.checkout_root`), else the current
    directory (an installed package: its ``site-packages`` is no place for results).
    """
    root = checkout_root()
    return root if root is not None else Path.cwd()


def log(message: str) -> None:
    """One timestamped progress line, flushed (the parent of seed workers echoes these lines from their logs)."""
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


def run_complete(run_dir: Path, name: str, iterations: int) -> bool:
    """Whether the run ``name`` in ``run_dir`` is done (``"before"``: the evaluation of the start; else an arm)."""
    return (run_dir / "eval.json").is_file() if name == "before" else _finished(run_dir, iterations)


def reused_runs(cfg: DictConfig, out: Path, arms: list[str]) -> list[str]:
    """What a rerun of the ablation in ``out`` takes as it is, one line each (empty for a fresh results folder).

    Finished runs, runs resumed from their checkpoint and warm starts already made.
    """
    lines = [f"warm start {_shown(p)}" for p in sorted((out / "init").glob("policy_seed*.pt"))]
    for seed in (int(s) for s in cfg.seeds):
        for name in ["before", *arms]:
            run_dir = out / "runs" / f"{name}_seed{seed}"
            if run_complete(run_dir, name, int(cfg.iterations)):
                what = "evaluation" if name == "before" else "run"
                lines.append(f"{LABELS[name]}, seed {seed}: finished {what} {_shown(run_dir)}")
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
    # shared: one seed named in the config, not the first of `seeds` (seeds=[2] made another warm start than [0, 1, 2])
    seed = seed if cfg.warm_start.per_seed else int(cfg.warm_start.seed)
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
    """``path`` relative to :func:`base_dir` when inside it (shorter logs), else absolute."""
    base = base_dir()
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)


def _arm_config(cfg: DictConfig, arm: str, seed: int, run_dir: Path, init: Path | None, extra: list[str]) -> DictConfig:
    """The training config of one arm and seed: exactly what ``rlanything train <overrides>`` would use."""
    choices = HydraConfig.get().runtime.choices
    groups = [f"{g}={choices[g]}" for g in ("model", "scale") if g in choices]
    overrides = [
        _setting_override(cfg),
        *groups,
        f"arm={arm}",
        f"seed={seed}",
        f"run_dir={run_dir}",
        *_overrides(cfg),
        *model_overrides(HydraConfig.get().overrides.task),
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
        return run_dir  # finished earlier: a rerun of the ablation resumes where it stopped (and lists them)
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
