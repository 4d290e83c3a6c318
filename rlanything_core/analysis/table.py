"""The ablation's table (the paper's Table 1 layout) with paired differences from outcome-only.

Rows: Before Optimization, Outcome Only (GRPO), Policy, Policy + Reward, Policy + Reward + Env, Step-only. Columns:
the paper's metrics as mean ± 95% t-interval half-width over seeds; then, per policy metric with per-episode outcomes
(In-Dom, OOD), the row's paired difference from the outcome-only row with its 95% seed-level bootstrap interval
(seeds, then games within them: ``stats.hierarchical_bootstrap_difference``); then the policy and judge
updates each seed made. Below the table: the minimum detectable difference (80% power) of the design, planned
(``stats.pair_sd``, ``stats.seed_sd``) and as measured on the full arm's pairs (``power``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from omegaconf import DictConfig

from rlanything_core.analysis.power import minimum_detectable_difference, observed_noise
from rlanything_core.analysis.results import ALL_SPLITS, ArmRun, game_success
from rlanything_core.analysis.stats import PairedDifference, hierarchical_bootstrap_difference, mean_ci

__all__ = [
    "LABELS",
    "REFERENCE",
    "Cell",
    "Power",
    "Table",
    "build_table",
    "columns",
    "full_beats_outcome_only",
    "paired_columns",
    "render_csv",
    "render_markdown",
    "split_names",
]

LABELS = {
    "before": "Before Optimization",
    "outcome_only": "Outcome Only (GRPO)",
    "policy": "Policy",
    "policy_judge": "Policy + Reward",
    "full": "Policy + Reward + Env",
    "step_only": "Step-only (optimized judge)",
    # the pre-registered experiments (docs/results.md, "Pre-registered"): one shipped arm config each
    "e2_expected_vote": "E2: Policy + Reward, expected vote",
    "e2_m9": "E2: Policy + Reward, m = 9 votes",
    "e3_expert_exact": "E3a: expert-agreement votes",
    "e3_expert_flipped": "E3b: expert-agreement votes, 36% flipped",
    "e4_policy_judge_state_summary": "E4: Policy + Reward, judge reads the state",
    "e4_full_state_summary": "E4: Policy + Reward + Env, judge reads the state",
}
"""Every shipped arm's row label (``rlanything_core/conf/arm/<name>.yaml``), in the table's order."""
REFERENCE = "outcome_only"
"""The row every paired difference is taken from."""


def split_names(cfg: DictConfig) -> tuple[str, str]:
    """The in-distribution and out-of-distribution evaluation splits' metric prefixes (one set for coding)."""
    if "eval_split_names" in cfg.setting:  # a setting that names its splits (miniwob, desktop)
        return str(cfg.setting.eval_split_names[0]), str(cfg.setting.eval_split_names[-1])
    if cfg.setting.name == "alfworld":
        names = list(cfg.setting.eval_splits)
        return names[0], names[-1]
    if cfg.setting.name == "textworld":
        return f"quest_{cfg.setting.eval_quest_lengths[0]}", f"quest_{cfg.setting.eval_quest_lengths[-1]}"
    return str(cfg.setting.eval_set), str(cfg.setting.eval_set)  # coding: one evaluation set


def columns(cfg: DictConfig) -> list[tuple[str, str]]:
    """The table's ``(header, metric)`` columns, the policy's main metric first (the paper's Table 1 per setting)."""
    id_split, ood_split = split_names(cfg)
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
        # threshold-free: the ROC AUC (x100) of each step's mean vote against the planner (loop/judge_probe.py)
        ("RM Process (AUC x100)", f"eval/{id_split}/judge_process_auc"),
    ]


def paired_columns(cfg: DictConfig) -> list[tuple[str, str]]:
    """``(header, split)`` of the paired-difference columns.

    The success rate of each distinct evaluation split, then, with two splits, of both pooled (:data:`ALL_SPLITS`:
    every evaluation game, the main question's column).
    """
    id_split, ood_split = split_names(cfg)
    if "eval_set" in cfg.setting:
        return []  # coding keeps no per-problem outcomes
    if ood_split == id_split:
        return [("In-Dom", id_split)]
    return [("In-Dom", id_split), ("OOD", ood_split), ("All", ALL_SPLITS)]


@dataclass(frozen=True)
class Cell:
    """Mean ± half-width of a 95% t-interval over ``n`` seeds (in %)."""

    mean: float
    half: float
    n: int


@dataclass(frozen=True)
class Power:
    """The design's minimum detectable difference on one paired column (in points, 80% power, two-sided 5%).

    Attributes:
        seeds: seeds paired.
        units_per_seed: paired games per seed.
        planned: the MDD with the planning noise (``stats.pair_sd`` per game, ``stats.seed_sd`` across seeds).
        pair_sd: the planning ``pair_sd``.
        seed_sd: the planning ``seed_sd``.
        measured: the MDD with the noise measured on the compared arm's pairs, or None (no such arm).
        measured_on: the arm it was measured on.
    """

    seeds: int
    units_per_seed: int
    planned: float
    pair_sd: float
    seed_sd: float
    measured: float | None = None
    measured_on: str | None = None


@dataclass(frozen=True)
class Table:
    """The computed table.

    Attributes:
        headers: the metric columns' headers.
        paired_headers: the paired-difference columns' headers.
        rows: per row (arm), its metric cells (None: no value) in ``headers`` order.
        paired: per row, its paired differences from outcome-only in ``paired_headers`` order, in % (None: the
            reference row itself, or no per-episode outcomes).
        updates: per row, ``(seed, policy updates, judge updates)`` of each seed's run.
        power: per paired column, the design's minimum detectable difference (None: no paired outcomes).
    """

    headers: list[str]
    paired_headers: list[str]
    rows: dict[str, list[Cell | None]]
    paired: dict[str, list[PairedDifference | None]]
    updates: dict[str, list[tuple[int, int, int]]]
    power: list[Power | None] = field(default_factory=list)


def _cells(runs: Sequence[ArmRun], metric_columns: Sequence[tuple[str, str]]) -> list[Cell | None]:
    cells: list[Cell | None] = []
    for _, key in metric_columns:
        values = [100 * r.final[key] for r in runs if key in r.final]
        cells.append(Cell(*mean_ci(values), len(values)) if values else None)
    return cells


def _paired(
    runs: Sequence[ArmRun], reference: Sequence[ArmRun], split: str, *, samples: int, seed: int
) -> PairedDifference | None:
    """The paired difference in % of ``runs`` from ``reference`` on ``split``, over the seeds both have."""
    seeds = {r.seed for r in runs} & {r.seed for r in reference}
    arm = game_success([r for r in runs if r.seed in seeds], split)
    ref = game_success([r for r in reference if r.seed in seeds], split)
    if not arm or not ref:
        return None
    d = hierarchical_bootstrap_difference(arm, ref, samples=samples, seed=seed)  # raises when the games differ
    return PairedDifference(100 * d.estimate, 100 * d.low, 100 * d.high, d.units)


MEASURED_ON = ("full", "policy_judge", "policy", "step_only")
"""The arm whose pairs with outcome-only measure the design's noise: the first of these that ran."""


def _power(cfg: DictConfig, results: Mapping[str, Sequence[ArmRun]], split: str) -> Power | None:
    """The column's MDD: planned from ``cfg.stats`` on the reference's (seeds, games), measured on an arm's pairs."""
    reference = list(results.get(REFERENCE, []))
    ref = game_success(reference, split) if reference else None
    if not ref:
        return None
    seeds = len({s for s, _ in ref})
    units = max(1, len(ref) // seeds)
    stats = cfg.get("stats") or {}
    pair_sd, seed_sd = float(stats.get("pair_sd", 0.45)), float(stats.get("seed_sd", 0.0))
    planned = 100 * minimum_detectable_difference(pair_sd, units, seeds, seed_sd=seed_sd)
    for arm in MEASURED_ON:
        runs = [r for r in results.get(arm, []) if r.seed in {s for s, _ in ref}]
        values = game_success(runs, split) if runs else None
        if values:
            common = set(values) & set(ref)
            noise = observed_noise({u: values[u] for u in common}, {u: ref[u] for u in common})
            return Power(seeds, units, planned, pair_sd, seed_sd, 100 * noise.mdd(), arm)
    return Power(seeds, units, planned, pair_sd, seed_sd)


def build_table(
    cfg: DictConfig, results: Mapping[str, Sequence[ArmRun]], *, samples: int = 10_000, seed: int = 0
) -> Table:
    """Compute every row of the table from each arm's runs (``results["before"]`` and one entry per arm).

    Args:
        cfg: the ablation's config (setting, to name the columns).
        results: arm -> its runs, one per seed.
        samples: bootstrap resamples of the paired intervals.
        seed: the bootstrap's seed (deterministic tables).

    Raises:
        ValueError: two arms whose evaluation games differ (the statistics assume paired games).
    """
    metric_columns = columns(cfg)
    pairs = paired_columns(cfg)
    reference = list(results.get(REFERENCE, []))
    table = Table([h for h, _ in metric_columns], [h for h, _ in pairs], {}, {}, {})
    for arm, runs in results.items():
        table.rows[arm] = _cells(runs, metric_columns)
        table.paired[arm] = [
            None if arm == REFERENCE or not reference else _paired(runs, reference, split, samples=samples, seed=seed)
            for _, split in pairs
        ]
        table.updates[arm] = [(r.seed, r.policy_updates, r.judge_updates) for r in runs]
    table.power.extend(_power(cfg, results, split) for _, split in pairs)
    return table


def _shown_cell(c: Cell | None) -> str:
    return f"{c.mean:.1f} ± {c.half:.1f} ({c.n})" if c else "–"


def _shown_paired(d: PairedDifference | None, arm: str) -> str:
    if arm == REFERENCE:
        return "ref"
    return f"{d.estimate:+.1f} [{d.low:+.1f}, {d.high:+.1f}]" if d else "–"


def _shown_updates(updates: Sequence[tuple[int, int, int]], arm: str) -> str:
    return "–" if arm == "before" else ", ".join(f"{p}/{j}" for _, p, j in updates)


def render_markdown(table: Table, caption: str) -> str:
    """The table as Markdown under ``caption``."""
    headers = [
        *table.headers,
        *[f"Δ {h} vs outcome-only [95% CI]" for h in table.paired_headers],
        "updates policy/judge (per seed)",
    ]
    lines = [caption, "", "| Row | " + " | ".join(headers) + " |", "|" + "---|" * (len(headers) + 1)]
    for arm, cells in table.rows.items():
        shown = [
            *[_shown_cell(c) for c in cells],
            *[_shown_paired(d, arm) for d in table.paired[arm]],
            _shown_updates(table.updates[arm], arm),
        ]
        lines.append(f"| {LABELS[arm]} | " + " | ".join(shown) + " |")
    notes = [_shown_power(h, p) for h, p in zip(table.paired_headers, table.power) if p is not None]
    if notes:
        lines += [
            "",
            "Minimum detectable difference (80% power, two-sided 5%) of this design: " + "; ".join(notes) + ".",
        ]
    return "\n".join(lines) + "\n"


def _shown_power(header: str, p: Power) -> str:
    measured = (
        ""
        if p.measured is None
        else f", {p.measured:.1f} with the noise measured on {LABELS[str(p.measured_on)]} vs outcome-only"
    )
    return (
        f"{header} {p.planned:.1f} points planned ({p.seeds} seeds x {p.units_per_seed} games, paired sd "
        f"{p.pair_sd:g} per game, seed sd {p.seed_sd:g}){measured}"
    )


def render_csv(table: Table) -> str:
    """The table as CSV: per row the means, the half-widths, the seeds, the paired differences and the updates."""
    out = io.StringIO()
    writer = csv.writer(out)
    paired_cols = [f"{h} {part}" for h in table.paired_headers for part in ("diff", "diff low", "diff high", "pairs")]
    writer.writerow(
        [
            "row",
            *[f"{h} mean" for h in table.headers],
            *[f"{h} ci95" for h in table.headers],
            "seeds",
            *paired_cols,
            "policy_updates",
            "judge_updates",
        ]
    )
    for arm, cells in table.rows.items():
        paired: list[str] = []
        for d in table.paired[arm]:
            paired.extend([f"{d.estimate:.2f}", f"{d.low:.2f}", f"{d.high:.2f}", str(d.units)] if d else [""] * 4)
        updates = table.updates[arm]
        writer.writerow(
            [
                LABELS[arm],
                *[f"{c.mean:.2f}" if c else "" for c in cells],
                *[f"{c.half:.2f}" if c else "" for c in cells],
                len(updates),
                *paired,
                ";".join(str(p) for _, p, _ in updates),
                ";".join(str(j) for _, _, j in updates),
            ]
        )
    return out.getvalue()


def full_beats_outcome_only(table: Table) -> str:
    """``"true"`` only when the full arm's paired interval on the main question's column lies above 0.

    The main column is every evaluation game when the splits are pooled, else the first split; ``"na"`` without one.
    """
    paired = table.paired.get("full")
    if not paired or paired[-1] is None:
        return "na"
    return str(paired[-1].excludes_zero_above).lower()
