"""Reproduce the paper's ablation (Table 1): `python experiments/ablate.py [+setting=...] [+profile=smoke|full]`.

For each seed: a warm-started policy (ALFWorld: supervised on the training split's expert demonstrations) and a
small judge that starts weak; the "before optimization" row evaluates them; then every arm trains from the same
start with `experiments/train.py` (each run resumable in its own directory):

    outcome_only   Outcome only (GRPO)
    policy         integrated feedback, judge frozen                       (Table 1 "Policy")
    policy_judge   + judge optimized with consistency feedback             (Table 1 "Policy + Reward")
    full           + environment adaptation (full RLAnything)              (Table 1 "Policy + Reward + Env")
    step_only      step-wise rewards of the full arm's optimized judge, no outcome (PAPER §6.1)

Writes `experiments/results/<setting>/<run_id>/`: table.md, table.csv, curves.png, judge.png, accepted.png, runs.json,
config.yaml, meta.json (seeds, versions, git revision, command). Last line:
`arms=<int> seeds=<int> minutes=<float> full_beats_outcome_only=<true|false|na> sample_efficiency=<float|na>`.
"""

from __future__ import annotations

import csv
import filecmp
import io
import json
import logging
import math
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import hydra  # noqa: E402
from hydra import compose  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
OmegaConf.register_new_resolver("add", lambda a, b: int(a) + int(b), replace=True)

import warm_start  # noqa: E402
from builders import close_shared_env_pools  # noqa: E402
from config_checks import ConfigError, validate  # noqa: E402
from reuse import reuse_file, reuse_run  # noqa: E402
from rlanything_core.environment._io import atomic_write_bytes, atomic_write_json, atomic_write_text  # noqa: E402
from train import run_training  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LABELS = {
    "before": "Before Optimization",
    "outcome_only": "Outcome Only (GRPO)",
    "policy": "Policy",
    "policy_judge": "Policy + Reward",
    "full": "Policy + Reward + Env",
    "step_only": "Step-only (optimized judge)",
}
# Overrides of train.py that ablate.py forwards (everything else comes from the arm and the seed).
FORWARDED = (
    "iterations",
    "tasks_per_iteration",
    "group_size",
    "num_votes",
    "lam",
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


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _completed(run_dir: Path) -> int:
    """Iterations a run's last checkpoint has completed (the data module's state in the checkpoint)."""
    import torch

    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    return int(ckpt.get("RolloutDataModule", {}).get("completed", 0))


def _finished(run_dir: Path, iterations: int) -> bool:
    """Whether a training run has a checkpoint that completed ``iterations``."""
    return (run_dir / "checkpoints" / "last.ckpt").is_file() and _completed(run_dir) >= iterations


def _read_metrics(run_dir: Path) -> list[dict[str, float]]:
    path = run_dir / "logs" / "metrics.csv"
    if not path.is_file():
        return []
    rows = []
    with open(path) as fh:
        for row in csv.DictReader(fh):
            rows.append({k: float(v) for k, v in row.items() if v not in ("", None)})
    return rows


def _warm_start(cfg: DictConfig, seed: int, out: Path) -> Path | None:
    """The warm-started policy of ``seed`` (cached in the results folder), or None where there is none.

    Only the tiny policy of the ALFWorld setting is warm-started; a pretrained policy starts from its own weights.

    With ``warm_start.per_seed: false`` every seed starts from seed 0's warm start (the seeds then vary the RL runs
    only), which halves the set-up time of the CPU default.
    """
    if cfg.setting.name != "alfworld" or not cfg.warm_start.enabled:
        return None
    if not str(cfg.model.policy.get("_target_", "")).endswith(".tiny_model_and_tokenizer"):
        # warm_start.py trains the tiny policy from scratch; a pretrained policy starts from its own weights, as the
        # paper's base models do
        _log(f"warm start: skipped (model={cfg.model.name} is pretrained; the warm start is for the tiny policy)")
        return None
    # a seed worker's cfg.seeds is its own seed only: its parent passes the shared seed
    seed = seed if cfg.warm_start.per_seed else int(cfg.get("warm_start_seed", cfg.seeds[0]))
    target = out / "init" / f"policy_seed{seed}.pt"
    if target.is_file():
        return target
    m = cfg.model.policy
    argv = [
        "--seed", str(seed),
        "--hidden", str(m.hidden),
        "--layers", str(m.layers),
        "--history", str(cfg.setting.max_history_turns),  # prompts exactly as the loop renders them
        *[str(a) for a in cfg.warm_start.args],
    ]  # fmt: skip
    record = target.with_suffix(".json")  # how the policy was made: what a later profile's reuse compares
    source = _reuse_root(cfg, out)
    if source is not None:
        made = source / "init" / target.name
        made_record = made.with_suffix(".json")
        if reuse_file(made, target, made_record.read_text() if made_record.is_file() else "", json.dumps(argv)):
            atomic_write_text(record, json.dumps(argv))
            _log(f"warm start (seed {seed}): reused {_shown(made)} (same recipe)")
            return target
    _log(f"warm start (seed {seed}): experiments/warm_start.py {' '.join(argv)}")
    warm_start.main([*argv, "--save", str(target)])
    atomic_write_text(record, json.dumps(argv))
    return target


def _same_file(a: Path, b: Path) -> bool:
    return a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)


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


def _arm_config(
    cfg: DictConfig, arm: str, seed: int, run_dir: Path, init: Path | None, extra: list[str]
) -> DictConfig:
    """The train.py config of one arm and seed: exactly what `python experiments/train.py <overrides>` would use."""
    choices = HydraConfig.get().runtime.choices
    groups = [f"{g}={choices[g]}" for g in ("model", "scale") if g in choices]
    overrides = [
        _setting_override(cfg), *groups, f"arm={arm}", f"seed={seed}", f"run_dir={run_dir}", *_overrides(cfg), *extra
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
        return run_dir  # finished earlier: a rerun of ablate.py resumes where it stopped
    if name is not None and (run_dir / "eval.json").is_file():
        return run_dir
    arm_cfg = _arm_config(cfg, arm, seed, run_dir, init, extra)
    source = _reuse_root(cfg, out)
    if source is not None:
        other = source / "runs" / run_dir.name
        finished = (other / "eval.json").is_file() if name else _finished(other, int(cfg.iterations))
        # the config names the warm start by path: the two files must also hold the same weights
        same_init = init is None or _same_file(source / "init" / init.name, init)
        if finished and same_init and reuse_run(other, run_dir, OmegaConf.to_yaml(arm_cfg, resolve=True), source, out):
            _log(f"{LABELS[name or arm]}, seed {seed}: reused {_shown(other)} (identical resolved config)")
            return run_dir
    started = time.monotonic()
    _log(f"{LABELS[name or arm]}, seed {seed}: {'evaluating' if name else 'training'} in {_shown(run_dir)}")
    run_training(arm_cfg)
    _log(f"{LABELS[name or arm]}, seed {seed}: done in {(time.monotonic() - started) / 60:.1f} min")
    return run_dir


def _eval_rows(rows: list[dict[str, float]]) -> list[dict[str, float]]:
    return [r for r in rows if "eval/iteration" in r]


def _final_eval(rows: list[dict[str, float]]) -> dict[str, float]:
    evals = _eval_rows(rows)
    return evals[-1] if evals else {}


def _split_names(cfg: DictConfig) -> tuple[str, str]:
    if cfg.setting.name == "alfworld":
        names = list(cfg.setting.eval_splits)
        return names[0], names[-1]
    if cfg.setting.name == "textworld":
        return f"quest_{cfg.setting.eval_quest_lengths[0]}", f"quest_{cfg.setting.eval_quest_lengths[-1]}"
    return str(cfg.setting.eval_set), str(cfg.setting.eval_set)  # coding: one evaluation set


def _columns(cfg: DictConfig) -> list[tuple[str, str]]:
    """The table's ``(header, metric)`` columns, the policy's main metric first (the paper's Table 1 per setting)."""
    id_split, ood_split = _split_names(cfg)
    if "eval_set" in cfg.setting:  # coding: pass@1 of the policy, the unit-test writer's UT and Detect rewards
        return [
            ("pass@1", f"eval/{id_split}/pass@1"),
            ("RM UT", f"eval/{id_split}/ut"),
            ("RM Detect", f"eval/{id_split}/detect"),
        ]
    return [
        ("In-Dom", f"eval/{id_split}/success_rate"),
        ("OOD", f"eval/{ood_split}/success_rate"),
        ("RM Process", f"eval/{id_split}/judge_process_acc"),
        ("RM Outcome", f"eval/{id_split}/judge_outcome_acc"),
        # not in the paper: plain accuracy rewards a judge that votes the majority label (see loop/evaluation.py)
        ("RM Process (balanced)", f"eval/{id_split}/judge_process_bacc"),
        ("RM Outcome (balanced)", f"eval/{id_split}/judge_outcome_bacc"),
    ]


def _mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of a 95% t-interval (0 for one value)."""
    t95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t95.get(n, 1.96) * sd / math.sqrt(n)


def _curve(rows: list[dict[str, float]]) -> tuple[list[float], list[float]]:
    """Cumulative environment steps and training success rate, per iteration."""
    steps, success, total = [], [], 0.0
    for r in rows:
        done = r.get("rollout/steps", r.get("rollout/rollouts"))  # coding: one program is one environment step
        if "rollout/success_rate" in r and done is not None:
            total += done
            steps.append(total)
            success.append(r["rollout/success_rate"])
    return steps, success


def sample_efficiency(
    full: list[tuple[list[float], list[float]]], outcome: list[tuple[list[float], list[float]]]
) -> float | None:
    """Env steps the full arm needs to reach the outcome-only arm's final training success, over the outcome-only
    arm's steps (mean curves over seeds; the last two iterations smooth the target); None if never reached, or if
    the outcome-only arm ends at zero success."""

    def mean_curve(curves: list[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
        n = min(len(c[0]) for c in curves)
        return (
            [sum(c[0][i] for c in curves) / len(curves) for i in range(n)],
            [sum(c[1][i] for c in curves) / len(curves) for i in range(n)],
        )

    if not full or not outcome or min(len(c[0]) for c in full + outcome) < 2:
        return None
    f_steps, f_succ = mean_curve(full)
    o_steps, o_succ = mean_curve(outcome)
    target = sum(o_succ[-2:]) / 2
    if target <= 0:  # outcome-only never succeeded: "reaching" it means nothing
        return None
    for i in range(1, len(f_succ)):
        if (f_succ[i - 1] + f_succ[i]) / 2 >= target:
            return f_steps[i] / o_steps[-1]
    return None


def _save_figure(fig: Any, path: Path) -> None:
    """Save a figure atomically (a crash never leaves a truncated PNG)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    atomic_write_bytes(path, buffer.getvalue())


def _plots(
    out: Path,
    curves: dict[str, list[tuple[list[float], list[float]]]],
    judge: dict[str, list[list[dict[str, float]]]],
    accepted: list[list[float]],
    split: str,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm, runs in curves.items():
        n = min((len(s) for s, _ in runs), default=0)
        if n == 0:
            continue
        x = [sum(s[i] for s, _ in runs) / len(runs) for i in range(n)]
        ys = [[succ[i] for _, succ in runs] for i in range(n)]
        mean = [sum(y) / len(y) for y in ys]
        ax.plot(x, mean, marker="o", label=LABELS[arm])
        ax.fill_between(x, [min(y) for y in ys], [max(y) for y in ys], alpha=0.15)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("training success rate")
    ax.set_title("Training success per arm (mean, band = min-max over seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save_figure(fig, out / "curves.png")
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for col, (metric, title) in enumerate(
        [("judge_process", "process accuracy (planner labels)"), ("judge_outcome", "outcome accuracy")]
    ):
        for k, (arm, runs) in enumerate(judge.items()):
            for suffix, style, label in (("acc", "-", LABELS[arm]), ("bacc", "--", None)):
                key = f"eval/{split}/{metric}_{suffix}"
                points = [[(e["eval/iteration"], e[key]) for e in run if key in e] for run in runs]
                points = [p for p in points if len(p) > 1]  # the "before" point alone: an arm with no judge
                if not points:
                    continue
                n = min(len(p) for p in points)
                axes[col].plot(
                    [points[0][i][0] for i in range(n)],
                    [sum(p[i][1] for p in points) / len(points) for i in range(n)],
                    style, color=f"C{k}", marker="o", label=label,
                )
        axes[col].set_title(f"Judge {title}, {split}\n(solid: accuracy, dashed: balanced accuracy)", fontsize=9)
        axes[col].set_xlabel("iteration")
        axes[col].legend(fontsize=7)
    fig.tight_layout()
    _save_figure(fig, out / "judge.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, series in enumerate(accepted):
        ax.plot(range(1, len(series) + 1), series, marker="o", label=f"seed {k}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("accepted tasks (cumulative)")
    ax.set_title("Environment adaptation: accepted rewrites")
    if accepted:
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save_figure(fig, out / "accepted.png")
    plt.close(fig)


def _git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "lightning", "textworld", "alfworld", "hydra-core"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def _run_seed(cfg: DictConfig, seed: int, out: Path, arms: list[str]) -> dict[str, Path]:
    """Warm start, "before" evaluation and every arm of one seed (each skipped when already complete).

    Returns:
        The run folder of "before" and of each arm, in order.
    """
    try:
        init = _warm_start(cfg, seed, out)
        dirs = {"before": _train(cfg, "policy", seed, out, init, extra=["++eval_only=true"], name="before")}
        for arm in arms:
            extra = ["++eval.at_start=false"]
            if arm == "step_only":  # the step-wise rewards of the judge that the full arm optimized
                judge = out / "runs" / f"full_seed{seed}" / "checkpoints" / "last.ckpt"
                extra.append(f"++arm.judge_checkpoint={judge}")
            dirs[arm] = _train(cfg, arm, seed, out, init, extra=extra)
        return dirs
    finally:
        close_shared_env_pools()


def _seed_worker_command(cfg: DictConfig, seed: int) -> list[str]:
    """This script's command line for one seed, as a worker that only runs (or resumes) that seed's runs."""
    replaced = ("seeds=", "jobs=", "setting.env_workers=", "seed_worker=", "warm_start_seed=")
    kept = [a for a in sys.argv[1:] if not a.lstrip("+").startswith(replaced)]
    # Each worker steps its games in its own process: the workers already fill the cores, and the games a worker
    # has loaded stay cached for all its arms.
    return [sys.executable, str(Path(__file__).resolve()), *kept, f"seeds=[{seed}]", "setting.env_workers=1",
            "++seed_worker=true", f"++warm_start_seed={int(cfg.seeds[0])}"]  # fmt: skip


def _run_seeds_in_parallel(cfg: DictConfig, out: Path) -> None:
    """Run the seeds in ``cfg.jobs`` worker processes at a time, echoing their progress lines; raise if one fails.

    The parent then finds every run complete and only aggregates. On 2 cores, two single-threaded seed workers keep
    both cores busy, where one process alternates between the model (one core) and the environment workers.
    """
    seeds = [int(s) for s in cfg.seeds]
    waiting = list(seeds)
    running: dict[int, tuple[subprocess.Popen[bytes], Path, int]] = {}
    (out / "logs").mkdir(parents=True, exist_ok=True)
    while waiting or running:
        while waiting and len(running) < int(cfg.jobs):
            seed = waiting.pop(0)
            log = out / "logs" / f"seed{seed}.log"
            with open(log, "ab") as fh:
                proc = subprocess.Popen(_seed_worker_command(cfg, seed), cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
            running[seed] = (proc, log, log.stat().st_size)
        time.sleep(2.0)
        for seed, (proc, log, offset) in list(running.items()):
            with open(log, "rb") as fh:
                fh.seek(offset)
                new = fh.read()
            running[seed] = (proc, log, offset + len(new))
            for line in new.decode(errors="replace").splitlines():
                if line.startswith("[") and "] " in line[:12]:  # the workers' progress lines (see _log)
                    print(f"seed {seed} {line}", flush=True)
            if proc.poll() is not None:
                del running[seed]
                if proc.returncode != 0:
                    for other, _, _ in running.values():
                        other.terminate()
                    raise RuntimeError(f"the worker of seed {seed} failed (exit {proc.returncode}); see {log}")


@hydra.main(config_path="conf", config_name="ablate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Run every arm over every seed, then write the table, the plots and the summary line."""
    os.chdir(hydra.utils.get_original_cwd())
    start = time.monotonic()
    try:
        validate(cfg)
    except ConfigError as err:
        print(f"ERROR: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    arms = list(cfg.arms)
    if "step_only" in arms and "full" in arms and arms.index("step_only") < arms.index("full"):
        raise SystemExit("ERROR: config key 'arms': step_only needs the full arm's judge; list full before it")
    out = REPO / str(cfg.results_root) / str(cfg.setting.name) / str(cfg.run_id)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("lightning.pytorch", "lightning.pytorch.utilities.rank_zero", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)  # one trainer per run: no repeated banners
    worker = bool(cfg.get("seed_worker", False))
    if worker:  # one seed's runs for a parent ablate.py, which writes the table
        _run_seed(cfg, int(cfg.seeds[0]), out, arms)
        return
    atomic_write_text(out / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    meta = {
        "command": " ".join(["python", "experiments/ablate.py", *sys.argv[1:]]),
        "seeds": list(cfg.seeds),
        "arms": arms,
        "git_revision": _git_revision(),
        "versions": _versions(),
        "started": time.time(),
    }
    atomic_write_json(out / "meta.json", meta)
    id_split, _ = _split_names(cfg)

    results: dict[str, list[dict[str, float]]] = {a: [] for a in ["before", *arms]}
    curves: dict[str, list[tuple[list[float], list[float]]]] = {a: [] for a in arms}
    judge_runs: dict[str, list[list[dict[str, float]]]] = {a: [] for a in arms}
    accepted: list[list[float]] = []
    runs: dict[str, str] = {}
    if int(cfg.jobs) > 1 and len(cfg.seeds) > 1:
        if not cfg.warm_start.per_seed:
            _warm_start(cfg, int(cfg.seeds[0]), out)  # shared by every seed: made once, before the workers start
        _run_seeds_in_parallel(cfg, out)
    for seed in cfg.seeds:
        before_eval: list[dict[str, float]] = []  # the seed's "before" evaluation: every arm's judge curve starts there
        for name, run_dir in _run_seed(cfg, int(seed), out, arms).items():
            rows = _read_metrics(run_dir)
            if name == "before":
                before = json.loads((run_dir / "eval.json").read_text())
                results["before"].append({f"eval/{k}": v for k, v in before.items()})
                before_eval = [{"eval/iteration": 0.0, **results["before"][-1]}]
                continue
            runs[f"{name}_seed{seed}"] = os.path.relpath(run_dir, out)  # relocatable: relative to the results folder
            results[name].append(_final_eval(rows))
            curves[name].append(_curve(rows))
            judge_runs[name].append(before_eval + _eval_rows(rows))
            if name == "full":
                key = "rollout/env/accepted_total"
                accepted.append([r[key] for r in rows if key in r])
    atomic_write_json(out / "runs.json", runs)

    columns = _columns(cfg)
    table_rows = []
    for arm in ["before", *arms]:
        cells = []
        for _, key in columns:
            values = [100 * r[key] for r in results[arm] if key in r]
            if values:
                mean, half = _mean_ci(values)
                cells.append((mean, half, len(values)))
            else:
                cells.append(None)
        table_rows.append((arm, cells))
    header = "| Row | " + " | ".join(c for c, _ in columns) + " |"
    lines = [
        f"Setting: {cfg.setting.name}; seeds: {list(cfg.seeds)}; iterations: {cfg.iterations}; values in %, "
        "mean ± 95% CI half-width over seeds (n).",
        "",
        header,
        "|" + "---|" * (len(columns) + 1),
    ]
    csv_text = io.StringIO()
    writer = csv.writer(csv_text)
    writer.writerow(["row", *[f"{c} mean" for c, _ in columns], *[f"{c} ci95" for c, _ in columns], "seeds"])
    for arm, cells in table_rows:
        shown = [f"{c[0]:.1f} ± {c[1]:.1f} ({c[2]})" if c else "–" for c in cells]
        lines.append(f"| {LABELS[arm]} | " + " | ".join(shown) + " |")
        writer.writerow(
            [
                LABELS[arm],
                *[f"{c[0]:.2f}" if c else "" for c in cells],
                *[f"{c[1]:.2f}" if c else "" for c in cells],
                len(results[arm]),
            ]
        )
    atomic_write_text(out / "table.csv", csv_text.getvalue())
    table = "\n".join(lines) + "\n"
    atomic_write_text(out / "table.md", table)
    _plots(out, curves, judge_runs, accepted, id_split)
    print(table)

    key = columns[0][1]  # the policy's main metric
    full = [r[key] for r in results.get("full", []) if key in r]
    outcome = [r[key] for r in results.get("outcome_only", []) if key in r]
    beats = "na" if not full or not outcome else str(sum(full) / len(full) > sum(outcome) / len(outcome)).lower()
    eff = sample_efficiency(curves.get("full", []), curves.get("outcome_only", []))
    minutes = (time.monotonic() - start) / 60
    print(
        f"arms={len(arms) + 1} seeds={len(cfg.seeds)} minutes={minutes:.1f} full_beats_outcome_only={beats} "
        f"sample_efficiency={'na' if eff is None else f'{eff:.2f}'}"
    )


if __name__ == "__main__":
    if not any(a.startswith(("+setting=", "setting=")) for a in sys.argv[1:]):
        sys.argv.append("+setting=alfworld")  # the embedded default
    main()
