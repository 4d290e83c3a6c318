"""The ablation's figures: learning curves, judge accuracy, accepted rewrites, and a forest plot of paired differences.

The judge's accuracy is drawn at every evaluation.

Each curve draws the mean over seeds with a band from the lowest to the highest seed (with two or three seeds a
t-interval would be wider than the axis). The forest plot draws each comparison's paired difference with its 95%
seed-level bootstrap interval (:func:`paired_forest`). Figures are written atomically (a crash never leaves a
truncated PNG).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.analysis.power import observed_noise
from rlanything_core.analysis.results import ArmRun
from rlanything_core.analysis.stats import PairedDifference, hierarchical_bootstrap_difference
from rlanything_core.analysis.table import LABELS
from rlanything_core.files import atomic_write_bytes

__all__ = ["Comparison", "ForestRow", "band_over_seeds", "judge_trajectory", "paired_forest", "write_forest",
           "write_plots"]


@dataclass(frozen=True)
class Comparison:
    """One line of a forest plot: ``arm - reference`` on the episodes both played.

    Attributes:
        label: what the line is called in the figure.
        arm: the arm's name in ``episodes.csv`` (``breakdown.read_folders`` names, e.g. ``full (36it)``).
        reference: the arm it is compared with.
    """

    label: str
    arm: str
    reference: str


@dataclass(frozen=True)
class ForestRow:
    """A comparison's measured difference, in points of success.

    Attributes:
        comparison: what was compared.
        difference: the mean paired difference (fraction) with its 95% seed-level bootstrap interval.
        mdd: the smallest difference these pairs detect with 80% power (fraction; ``power.observed_noise``).
        seeds: the training seeds both arms have, on which they were paired.
    """

    comparison: Comparison
    difference: PairedDifference
    mdd: float
    seeds: tuple[int, ...]


def band_over_seeds(
    series: Sequence[Mapping[float, float]],
) -> tuple[list[float], list[float], list[float], list[float]]:
    """``(x, mean, low, high)`` over the x values any seed has (each seed's value where it has one).

    Args:
        series: per seed, x -> value.
    """
    xs = sorted({x for s in series for x in s})
    mean, low, high = [], [], []
    for x in xs:
        values = [s[x] for s in series if x in s]
        mean.append(sum(values) / len(values))
        low.append(min(values))
        high.append(max(values))
    return xs, mean, low, high


def judge_trajectory(before: ArmRun | None, run: ArmRun, key: str) -> dict[float, float]:
    """Iteration -> ``key`` over every evaluation of ``run`` (the seed's "before" evaluation is iteration 0)."""
    rows = ([*before.evaluations] if before is not None else []) + run.evaluations
    return {r["eval/iteration"]: r[key] for r in rows if key in r}


def _save(fig: Any, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    atomic_write_bytes(path, buffer.getvalue())


def _curves(ax: Any, results: Mapping[str, Sequence[ArmRun]]) -> None:
    for k, (arm, runs) in enumerate(results.items()):
        series = [{float(i + 1): s for i, s in enumerate(r.curve[1])} for r in runs if r.curve[1]]
        if arm == "before" or not series:
            continue
        x, mean, low, high = band_over_seeds(series)
        ax.plot(x, mean, marker="o", color=f"C{k}", label=LABELS[arm])
        ax.fill_between(x, low, high, color=f"C{k}", alpha=0.15)
    ax.set_xlabel("iteration")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("training success rate")
    ax.set_title("Training success per arm (mean over seeds, band: min-max)", fontsize=9)
    ax.legend(fontsize=7)


# Arms whose judge starts as the "before" row's judge (step-only starts from the full arm's optimized judge).
_STARTS_FROM_BEFORE = ("policy", "policy_judge", "full")


def _judge(axes: Any, results: Mapping[str, Sequence[ArmRun]], split: str) -> None:
    before = {r.seed: r for r in results.get("before", [])}
    bands = "band min-max over seeds"
    panels = [  # (metric, title, what the lines are, (the solid line's suffix, the dotted line's))
        ("judge_process", "process accuracy vs the planner", f"solid: balanced accuracy, {bands}; dotted: accuracy",
         ("bacc", "acc")),
        ("judge_outcome", "outcome accuracy", f"solid: balanced accuracy, {bands}; dotted: accuracy", ("bacc", "acc")),
        ("judge_process", "process AUC of the mean vote vs the planner", f"threshold-free; {bands}", ("auc",)),
    ]  # fmt: skip
    for col, (metric, title, lines, suffixes) in enumerate(panels):
        for k, (arm, runs) in enumerate(results.items()):
            if arm == "before":
                continue
            for n, suffix in enumerate(suffixes):
                key = f"eval/{split}/{metric}_{suffix}"
                start = before if arm in _STARTS_FROM_BEFORE else {}
                series = [judge_trajectory(start.get(r.seed), r, key) for r in runs]
                series = [s for s in series if s]  # an arm without a judge (or a run older than the metric) has none
                if not series:
                    continue
                x, mean, low, high = band_over_seeds(series)
                solid = n == 0
                axes[col].plot(x, mean, "-" if solid else ":", color=f"C{k}", marker="o" if solid else None,
                               label=LABELS[arm] if solid else None)  # fmt: skip
                if solid:
                    axes[col].fill_between(x, low, high, color=f"C{k}", alpha=0.12)
        axes[col].axhline(0.5, color="grey", lw=0.8)
        axes[col].set_title(f"Judge {title}, {split}\n({lines})", fontsize=8)
        axes[col].set_xlabel("iteration")
        axes[col].xaxis.get_major_locator().set_params(integer=True)
        if axes[col].get_legend_handles_labels()[0]:
            axes[col].legend(fontsize=7)


def write_plots(out: Path, results: Mapping[str, Sequence[ArmRun]], split: str) -> None:
    """Write ``curves.png``, ``judge.png`` and ``accepted.png`` into ``out``.

    Args:
        out: the results folder.
        results: arm -> its runs, one per seed (``"before"`` included).
        split: the split whose judge accuracies are drawn (the in-distribution one).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    _curves(ax, results)
    fig.tight_layout()
    _save(fig, out / "curves.png")
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    _judge(axes, results, split)
    fig.tight_layout()
    _save(fig, out / "judge.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.6))
    full = results.get("full", [])
    for run in full:
        ax.plot(range(1, len(run.accepted) + 1), run.accepted, marker="o", label=f"seed {run.seed}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("accepted tasks (cumulative)")
    ax.set_title("Environment adaptation: accepted rewrites")
    if full:
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, out / "accepted.png")
    plt.close(fig)


def paired_forest(
    rows: Sequence[Mapping[str, str]], comparisons: Sequence[Comparison], *, seed: int = 0
) -> list[ForestRow]:
    """Every comparison's paired difference, both splits pooled, on the (seed, split, game, run) episodes both played.

    The same statistic as ``breakdown.paired_differences`` (and so as the table's "All" column): a
    two-level bootstrap over seeds, then games (10,000 resamples seeded by ``seed``).

    Args:
        rows: ``episodes.csv`` rows (``breakdown.read_folders``).
        comparisons: the lines to compute, in order.
        seed: the bootstrap's seed.

    Raises:
        ValueError: a comparison names an arm that ``rows`` lack, or two arms that share no seed.
    """
    success: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for row in rows:
        unit = (int(row["seed"]), f"{row['split']}/{row['game']}/{row.get('run', '0')}")
        success[row["arm"]][unit] = float(row["success"])
    out = []
    for c in comparisons:
        for name in (c.arm, c.reference):
            if name not in success:
                raise ValueError(f"comparisons: {c.label!r} names {name!r}, not an arm of rows ({sorted(success)})")
        seeds = tuple(sorted({s for s, _ in success[c.arm]} & {s for s, _ in success[c.reference]}))
        if not seeds:
            raise ValueError(f"comparisons: {c.label!r}: {c.arm!r} and {c.reference!r} share no seed")
        mine, theirs = ({u: v for u, v in success[a].items() if u[0] in seeds} for a in (c.arm, c.reference))
        difference = hierarchical_bootstrap_difference(mine, theirs, seed=seed)
        out.append(ForestRow(c, difference, observed_noise(mine, theirs).mdd(), seeds))
    return out


def write_forest(path: Path, groups: Mapping[str, Sequence[ForestRow]], *, title: str = "") -> None:
    """Draw a forest plot of paired differences (points, 95% interval) into ``path``, one panel block per group.

    Args:
        path: the PNG to write.
        groups: heading -> its rows (:func:`paired_forest`), drawn top to bottom.
        title: the figure's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: list[tuple[str, ForestRow | None]] = []
    for heading, rows in groups.items():
        lines.append((heading, None))
        lines += [(r.comparison.label, r) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(lines) + 1.2))
    labels = []
    for k, (label, row) in enumerate(lines):
        y = len(lines) - 1 - k
        labels.append((y, label, row is None))
        if row is None:
            continue
        d = row.difference
        resolved = d.low > 0 or d.high < 0  # the interval excludes 0
        color = ("C2" if d.estimate > 0 else "C3") if resolved else "C7"
        ax.errorbar(100 * d.estimate, y, xerr=[[100 * (d.estimate - d.low)], [100 * (d.high - d.estimate)]],
                    fmt="o", color=color, ecolor=color, capsize=3, ms=5)  # fmt: skip
        ax.annotate(f"{100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]", (1.01, y),
                    xycoords=("axes fraction", "data"), va="center", fontsize=8)  # fmt: skip
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks([y for y, _, _ in labels])
    ax.set_yticklabels([label for _, label, _ in labels], fontsize=8)
    for tick, (_, _, is_heading) in zip(ax.get_yticklabels(), labels, strict=True):
        if is_heading:
            tick.set_fontweight("bold")
    ax.set_ylim(-0.7, len(lines) - 0.3)
    ax.set_xlabel("paired difference in success, points (both splits pooled; 95% seed-level bootstrap interval)",
                  fontsize=8)  # fmt: skip
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
