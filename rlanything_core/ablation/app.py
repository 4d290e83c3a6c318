"""The paper's ablation (arXiv 2602.02488, Table 1) as a Hydra app: ``rlanything ablate [+setting=...] [+profile=...]``.

Also ``python -m experiments.ablate`` in a checkout (``+profile=smoke|full|...``).

For each seed: a warm-started policy (ALFWorld: supervised on the training split's expert demonstrations) and a
small judge that starts weak; the "before optimization" row evaluates them; then every arm trains from the same
start with the training app (:mod:`rlanything_core.assembly.train_app`; each run resumable in its own directory):

    outcome_only   Outcome only (GRPO)
    policy         integrated feedback, judge frozen                       (Table 1 "Policy")
    policy_judge   + judge optimized with consistency feedback             (Table 1 "Policy + Reward")
    full           + environment adaptation (full RLAnything)              (Table 1 "Policy + Reward + Env")
    step_only      step-wise rewards of the full arm's optimized judge, no outcome (arXiv 2602.02488)

Every arm and seed is evaluated on the same games with the same episode seeds (``eval.games`` x ``eval.runs``
episodes per split, ALFWorld's games drawn over all six task types by ``eval.sample_seed``), so the table gives,
beside each metric's mean ± 95% CI over seeds, each row's paired difference from outcome-only with a 95% seed-level
bootstrap interval (seeds, then their games: :mod:`rlanything_core.analysis.stats`) and the design's minimum
detectable difference (:mod:`rlanything_core.analysis.power`).

Modules: :mod:`~rlanything_core.ablation.runs` (warm start, runs), :mod:`~rlanything_core.ablation.workers` (the seed
workers), :mod:`~rlanything_core.ablation.budget` (the estimate), :mod:`rlanything_core.analysis` (reading runs back,
statistics, the table, the plots); this module wires them.

Writes ``<results_root>/<setting>/<run_id>/`` (default ``runs/ablations/...``; a relative root is taken from the
checkout when the package runs from one, else from the current directory; ``publish=true`` writes to
``reference_root`` instead, ``experiments/results/...``, the committed references, which no other run touches):
table.md, table.csv, episodes.csv (every evaluation episode: arm, seed, split, game, run, episode seed, success,
steps), curves.png, judge.png, accepted.png, runs.json, config.yaml, meta.json (seeds, versions, git revision,
command, the cost estimate, updates per arm and seed, the paired differences, the training pool). Last line:
``arms=<int> seeds=<int> minutes=<float> total_minutes=<float> full_beats_outcome_only=<true|false|na>
sample_efficiency=<float|na>`` (``minutes``: this invocation; ``total_minutes``: every invocation of this results
folder, ``timing.json``), where ``full_beats_outcome_only`` is true only when the full arm's paired interval on the
main metric lies above 0. Before it, when the run is not the published one and the committed reference table of the
same setting and profile (``<reference_root>/<setting>/<run_id>/table.md``) is there (a checkout), it is printed for
comparison.
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from rlanything_core.ablation.budget import calibration_note, estimate_seconds, plan_from_config
from rlanything_core.ablation.runs import base_dir, log, reused_runs, run_seed, warm_start_policy
from rlanything_core.ablation.workers import WorkerError, run_in_parallel
from rlanything_core.analysis.plots import write_plots
from rlanything_core.analysis.results import ArmRun, read_arm_run, read_before_run, render_episodes_csv
from rlanything_core.analysis.stats import sample_efficiency
from rlanything_core.analysis.table import (
    Table,
    build_table,
    full_beats_outcome_only,
    render_csv,
    render_markdown,
    split_names,
)
from rlanything_core.assembly.agent import alfworld_games, evaluation_episode_seed
from rlanything_core.assembly.checks import validate
from rlanything_core.assembly.train_app import error_line
from rlanything_core.conf import SEARCH_PATH
from rlanything_core.config import ConfigError
from rlanything_core.files import CorruptFileError, atomic_write_json, atomic_write_text, read_json
from rlanything_core.seeding import derive_seed
from rlanything_core.settings.alfworld import training_pool_summary

__all__ = ["cli", "main", "reference_table", "results_folder"]


def _git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=base_dir(), capture_output=True, text=True, check=True
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


def _check_arms(arms: list[str]) -> None:
    if "step_only" in arms and "full" in arms and arms.index("step_only") < arms.index("full"):
        raise SystemExit("ERROR: config key 'arms': step_only needs the full arm's judge; list full before it")


def _collect(cfg: DictConfig, out: Path, arms: list[str]) -> tuple[dict[str, list[ArmRun]], dict[str, str]]:
    """Run (or find complete) every seed's runs, and read them back: arm -> runs, and run name -> folder."""
    if int(cfg.jobs) > 1:
        if not cfg.warm_start.per_seed:
            warm_start_policy(cfg, int(cfg.seeds[0]), out)  # shared by every seed: made once, before the workers
        run_in_parallel(cfg, out)
    results: dict[str, list[ArmRun]] = {a: [] for a in ["before", *arms]}
    runs: dict[str, str] = {}
    for seed in (int(s) for s in cfg.seeds):
        for name, run_dir in run_seed(cfg, seed, out, arms).items():
            if name == "before":
                results["before"].append(read_before_run(seed, run_dir))
                continue
            runs[f"{name}_seed{seed}"] = os.path.relpath(run_dir, out)  # relocatable: relative to the results folder
            results[name].append(read_arm_run(name, seed, run_dir))
    return results, runs


def _print_estimate(cfg: DictConfig) -> dict[str, float]:
    """Print what this config should cost (minutes by part) against ``budget.minutes``; return the parts."""
    parts = estimate_seconds(*plan_from_config(cfg, os.cpu_count() or 1))
    shown = ", ".join(f"{k} {v / 60:.1f}" for k, v in parts.items() if k != "total")
    budget = float(cfg.budget.minutes)
    verdict = "within" if parts["total"] <= 60 * budget else "OVER"
    reused = f"reusing runs of {cfg.reuse_from}" if cfg.get("reuse_from") else "cold"  # as the budget section plans
    log(f"estimated {parts['total'] / 60:.1f} min {reused} ({verdict} the budget of {budget:g}); per seed: {shown}")
    log(calibration_note(os.cpu_count() or 1))
    return parts


TIMING = "timing.json"
"""The wall seconds of every invocation of an ablation in its results folder (a resumed one adds to them)."""


def _earlier_seconds(out: Path) -> float:
    """The wall seconds the earlier invocations of this ablation spent (0 for a fresh one)."""
    path = out / TIMING
    return float(sum(read_json(path).get("invocations_s", []))) if path.is_file() else 0.0


def _add_seconds(out: Path, seconds: float) -> None:
    path = out / TIMING
    earlier = list(read_json(path).get("invocations_s", [])) if path.is_file() else []
    atomic_write_json(path, {"invocations_s": [*earlier, round(seconds, 1)]})


def _meta_results(table: Table) -> dict[str, object]:
    """The updates per arm and seed and the paired differences, for meta.json."""
    return {
        "updates": {
            arm: {str(seed): {"policy": p, "judge": j} for seed, p, j in rows}
            for arm, rows in table.updates.items()
            if arm != "before"
        },
        "paired_vs_outcome_only": {
            arm: {h: asdict(d) for h, d in zip(table.paired_headers, diffs) if d is not None}
            for arm, diffs in table.paired.items()
        },
        "minimum_detectable_difference": {h: asdict(p) for h, p in zip(table.paired_headers, table.power) if p},
    }


def _episode_seeds(cfg: DictConfig) -> Callable[[int, str], int]:
    """``(training seed, split) -> the seed the evaluator collects that split's episodes with`` (episodes.csv)."""

    def seed_of(seed: int, split: str) -> int:
        merged = OmegaConf.merge(cfg, {"seed": seed})
        assert isinstance(merged, DictConfig)  # a DictConfig merged with a dict
        return derive_seed(evaluation_episode_seed(merged), split)

    return seed_of


def results_folder(cfg: DictConfig) -> Path:
    """Where this ablation writes: ``<results_root>/<setting>/<run_id>``, or under ``reference_root`` with ``publish``.

    Relative roots are taken from :func:`~rlanything_core.ablation.runs.base_dir`: the checkout, else the current
    directory.
    """
    root = cfg.reference_root if bool(cfg.get("publish", False)) else cfg.results_root
    return base_dir() / str(root) / str(cfg.setting.name) / str(cfg.run_id)


def reference_table(cfg: DictConfig, out: Path) -> str | None:
    """The committed reference ``table.md`` of this setting and run id, or None.

    None when ``out`` is that folder itself or there is none (an installed package without a checkout has no
    committed references).
    """
    ref = base_dir() / str(cfg.reference_root) / str(cfg.setting.name) / str(cfg.run_id)
    if ref.resolve() == out.resolve() or not (ref / "table.md").is_file():
        return None
    return (ref / "table.md").read_text()


@hydra.main(config_path=SEARCH_PATH, config_name="ablate", version_base="1.3")
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
    _check_arms(arms)
    out = results_folder(cfg)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"ERROR: cannot create the results folder {out} ({err.strerror}): set results_root=<a writable folder>",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None
    for name in ("lightning.pytorch", "lightning.pytorch.utilities.rank_zero", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)  # one Fabric per run: no repeated banners
    if bool(cfg.get("seed_worker", False)):  # one run (cfg.arms: [] for "before") for a parent ablation
        run_seed(cfg, int(cfg.seeds[0]), out, arms)
        return
    atomic_write_text(out / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    meta: dict[str, object] = {
        "command": " ".join(["rlanything", "ablate", *sys.argv[1:]]),
        "seeds": list(cfg.seeds),
        "arms": arms,
        "git_revision": _git_revision(),
        "versions": _versions(),
        "started": time.time(),
    }
    if cfg.setting.name == "alfworld":  # which games RL trains on: every task type in proportion
        meta["training_pool"] = training_pool_summary(alfworld_games(cfg)[0])
    meta["estimated_seconds"] = _print_estimate(cfg)
    atomic_write_json(out / "meta.json", meta)

    reused = reused_runs(cfg, out, arms)
    log(f"resuming {out}: reusing {len(reused)} finished or partial parts" if reused else f"a fresh ablation in {out}")
    for line in reused:
        log(f"  reusing {line}")
    earlier_s = _earlier_seconds(out)
    try:
        results, runs = _collect(cfg, out, arms)
    except (ConfigError, CorruptFileError, WorkerError, OSError) as err:  # one line: what failed and where to look
        _add_seconds(out, time.monotonic() - start)
        print(error_line(err), file=sys.stderr)
        raise SystemExit(2) from None
    except BaseException:  # an interrupted invocation's time adds to the ablation's total too
        _add_seconds(out, time.monotonic() - start)
        raise
    atomic_write_json(out / "runs.json", runs)
    table = build_table(cfg, results, samples=int(cfg.stats.bootstrap_samples), seed=int(cfg.stats.bootstrap_seed))
    caption = (
        f"Setting: {cfg.setting.name}; seeds: {list(cfg.seeds)}; iterations: {cfg.iterations}; evaluation: "
        f"{cfg.eval.games or 'every'} games x {cfg.eval.runs} runs per split (games: null = the whole split), the "
        "same for every arm (episode seeds per training seed). Values in %: "
        "mean ± 95% CI half-width over seeds (n); Δ: the row minus outcome-only on the same (seed, game) pairs, "
        f"[95% seed-level bootstrap interval: seeds, then their games; {cfg.stats.bootstrap_samples} resamples]."
    )
    text = render_markdown(table, caption)
    atomic_write_text(out / "table.csv", render_csv(table))
    atomic_write_text(out / "episodes.csv", render_episodes_csv(results, _episode_seeds(cfg)))
    atomic_write_text(out / "table.md", text)
    atomic_write_json(out / "meta.json", {**meta, **_meta_results(table)})
    write_plots(out, results, split_names(cfg)[0])
    print(text)
    reference = reference_table(cfg, out)
    if reference is not None:
        print(f"\nCommitted reference ({cfg.reference_root}/{cfg.setting.name}/{cfg.run_id}/table.md):\n{reference}")
    print(f"Results: {out}")

    beats = full_beats_outcome_only(table)
    eff = sample_efficiency(
        [r.curve for r in results.get("full", [])], [r.curve for r in results.get("outcome_only", [])]
    )
    minutes = (time.monotonic() - start) / 60
    _add_seconds(out, 60 * minutes)
    total = earlier_s / 60 + minutes
    print(
        f"arms={len(arms) + 1} seeds={len(cfg.seeds)} minutes={minutes:.1f} total_minutes={total:.1f} "
        f"full_beats_outcome_only={beats} sample_efficiency={'na' if eff is None else f'{eff:.2f}'}"
    )


def cli() -> None:
    """``main`` with the embedded default setting (``+setting=alfworld``) when the command line names none."""
    if not any(a.startswith(("+setting=", "setting=")) for a in sys.argv[1:]):
        # the embedded default, first: a profile given after it (+profile=smoke) overrides the setting's values
        sys.argv.insert(1, "+setting=alfworld")
    main()


if __name__ == "__main__":
    cli()
