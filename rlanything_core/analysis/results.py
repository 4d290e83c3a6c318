"""What one arm's run (one seed) left behind, read back for the table and the plots.

A run folder holds ``logs/metrics.csv`` (training rows and evaluation rows, the latter with ``eval/iteration``),
``eval_outcomes.json`` (the last evaluation episode by episode, :mod:`rlanything_core.assembly.eval_record`) and,
for the "before" row, ``eval.json``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.analysis.stats import Curve, curve
from rlanything_core.assembly.eval_record import read_eval_metrics, read_eval_outcomes
from rlanything_core.lightning import csv_logger

__all__ = [
    "ALL_SPLITS",
    "EPISODE_COLUMNS",
    "ArmRun",
    "eval_rows",
    "final_eval",
    "game_success",
    "read_arm_run",
    "read_before_run",
    "read_metrics",
    "render_episodes_csv",
]

EPISODE_COLUMNS = ("arm", "seed", "split", "game", "run", "episode_seed", "success", "steps")
"""The columns of ``episodes.csv``: one row per evaluation episode of every arm and seed (the table's raw data)."""


@dataclass
class ArmRun:
    """One arm's run for one seed.

    Attributes:
        arm: the arm (``"before"`` for the evaluation of the starting models).
        seed: the training seed.
        final: the last full evaluation's metrics (``eval/<split>/<metric>``); empty when none.
        curve: training success per iteration (:func:`~rlanything_core.analysis.stats.curve`).
        evaluations: every evaluation row in order (full ones and the judge-only ones), ``eval/iteration`` included.
        outcomes: the last evaluation's episodes (dicts with ``split, task_id, run, won, steps``), or None.
        policy_updates: optimizer steps taken on the policy over the run.
        judge_updates: optimizer steps taken on the judge.
        accepted: the cumulative accepted rewrites after each iteration (environment adaptation).
    """

    arm: str
    seed: int
    final: dict[str, float]
    curve: Curve = field(default_factory=lambda: ([], []))
    evaluations: list[dict[str, float]] = field(default_factory=list)
    outcomes: list[dict[str, Any]] | None = None
    policy_updates: int = 0
    judge_updates: int = 0
    accepted: list[float] = field(default_factory=list)


def read_metrics(run_dir: Path) -> list[dict[str, float]]:
    """The rows of ``run_dir/logs/metrics.csv`` (empty cells dropped); [] when absent; a damaged file is named."""
    return csv_logger.read_metrics(run_dir / "logs" / "metrics.csv")


def eval_rows(rows: Sequence[Mapping[str, float]]) -> list[dict[str, float]]:
    """The evaluation rows (full and judge-only), in order."""
    return [dict(r) for r in rows if "eval/iteration" in r]


def final_eval(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The last full evaluation (a row with a success or pass rate; judge-only rows have neither)."""
    full = [r for r in eval_rows(rows) if any(k.endswith(("/success_rate", "/pass@1")) for k in r)]
    return full[-1] if full else {}


def read_arm_run(arm: str, seed: int, run_dir: Path) -> ArmRun:
    """Read a training run's folder."""
    rows = read_metrics(run_dir)
    key = "rollout/env/accepted_total"
    return ArmRun(
        arm=arm,
        seed=seed,
        final=final_eval(rows),
        curve=curve(rows),
        evaluations=eval_rows(rows),
        outcomes=read_eval_outcomes(run_dir),
        policy_updates=int(sum(r.get("policy/updates", 0.0) for r in rows)),
        judge_updates=int(sum(r.get("judge/updates", 0.0) for r in rows)),
        accepted=[r[key] for r in rows if key in r],
    )


def read_before_run(seed: int, run_dir: Path) -> ArmRun:
    """Read the "before optimization" evaluation (``eval.json``, no training)."""
    metrics = {f"eval/{k}": v for k, v in read_eval_metrics(run_dir).items()}
    return ArmRun(
        arm="before",
        seed=seed,
        final=metrics,
        evaluations=[{"eval/iteration": 0.0, **metrics}],
        outcomes=read_eval_outcomes(run_dir),
    )


ALL_SPLITS = "*"
"""The ``split`` of :func:`game_success` that pools every evaluation split (games named ``<split>/<game>``)."""


def game_success(runs: Sequence[ArmRun], split: str) -> dict[tuple[int, str], float] | None:
    """Per ``(seed, game)`` of ``split``, the fraction of its evaluation runs won; None if a run kept no outcomes.

    ``split`` :data:`ALL_SPLITS` pools the splits: the games are then ``<split>/<game>``.

    Raises:
        ValueError: a seed's outcomes hold no episode of ``split``.
    """
    units: dict[tuple[int, str], list[bool]] = {}
    for run in runs:
        if run.outcomes is None:
            return None
        mine = [o for o in run.outcomes if split in (ALL_SPLITS, o["split"])]
        if not mine:
            raise ValueError(f"arm {run.arm}, seed {run.seed}: no evaluation episode of split {split!r}")
        for o in mine:
            game = f"{o['split']}/{o['task_id']}" if split == ALL_SPLITS else str(o["task_id"])
            units.setdefault((run.seed, game), []).append(bool(o["won"]))
    return {u: sum(w) / len(w) for u, w in units.items()}


def render_episodes_csv(results: Mapping[str, Sequence[ArmRun]], episode_seed: Callable[[int, str], int]) -> str:
    """Every evaluation episode of every arm and seed as CSV (:data:`EPISODE_COLUMNS`), to redo the analysis.

    Args:
        results: arm -> its runs (``"before"`` included); runs without outcomes add no rows.
        episode_seed: ``(training seed, split) -> the seed of that split's evaluation episodes`` (the collector seeds
            step ``t`` of game ``g``'s run ``j`` with ``derive_seed(episode_seed, g, j, t)``).

    Returns:
        The CSV text, rows ordered by arm (as given), seed, split, game, run; ``success`` is 0 or 1.
    """
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(EPISODE_COLUMNS)
    for arm, runs in results.items():
        for run in sorted(runs, key=lambda r: r.seed):
            ordered = sorted(run.outcomes or [], key=lambda o: (str(o["split"]), str(o["task_id"]), int(o["run"])))
            for o in ordered:
                split = str(o["split"])
                writer.writerow(
                    [arm, run.seed, split, o["task_id"], int(o["run"]), episode_seed(run.seed, split),
                     int(bool(o["won"])), int(o["steps"])]
                )  # fmt: skip
    return out.getvalue()
