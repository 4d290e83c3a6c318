"""The results page's summary figure: every paired difference of the committed ALFWorld runs, with its interval.

    python -m rlanything_core.analysis.summary [--out experiments/results/alfworld/summary_forest.png]

Reads the committed ``episodes.csv`` of the five-seed full profile (``experiments/results/alfworld/full``, 12
iterations) and of the five-seed 36-iteration runs (``experiments/results/alfworld/training_gain``), computes each
comparison's paired difference with its 95% seed-level bootstrap interval (``plots.paired_forest``, the
statistic of the ablation table's "All" column), prints them as a markdown table and draws the forest plot that
``docs/results.md`` opens with.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rlanything_core.analysis.breakdown import read_folders
from rlanything_core.analysis.plots import Comparison, ForestRow, paired_forest, write_forest
from rlanything_core.data_dir import checkout_root

__all__ = ["FOLDERS", "GROUPS", "summary_rows", "render"]

RESULTS = (checkout_root() or Path.cwd()) / "experiments" / "results" / "alfworld"
"""The committed ALFWorld results of the checkout (else ``./experiments/results/alfworld``)."""
FOLDERS = (str(RESULTS / "full"), f"36it={RESULTS / 'training_gain'}")
"""The committed folders read: the full profile (12 iterations) and the 36-iteration runs (arms ``<arm> (36it)``)."""

_OO36, _PR36, _FULL36 = "outcome_only_lr3e-5 (36it)", "policy_judge (36it)", "full (36it)"
GROUPS: dict[str, tuple[Comparison, ...]] = {
    "36 iterations, 5 seeds": (
        Comparison("outcome-only - before", _OO36, "before"),
        Comparison("policy + reward - before", _PR36, "before"),
        Comparison("full - before", _FULL36, "before"),
        Comparison("policy + reward - outcome-only", _PR36, _OO36),
        Comparison("full - policy + reward", _FULL36, _PR36),
        Comparison("full - outcome-only", _FULL36, _OO36),
        Comparison("outcome-only: 36 - 12 iterations", _OO36, "outcome_only"),
        Comparison("policy + reward: 36 - 12 iterations", _PR36, "policy_judge"),
        Comparison("full: 36 - 12 iterations", _FULL36, "full"),
    ),
    "12 iterations (+profile=full), 5 seeds": (
        Comparison("outcome-only - before", "outcome_only", "before"),
        Comparison("policy - before", "policy", "before"),
        Comparison("policy - outcome-only", "policy", "outcome_only"),
        Comparison("policy + reward - policy", "policy_judge", "policy"),
        Comparison("full - policy + reward", "full", "policy_judge"),
        Comparison("full - outcome-only", "full", "outcome_only"),
        Comparison("full - before", "full", "before"),
    ),
}
"""The figure's comparisons: the paper's Table 1 orderings and the effect of RL over the warm start, at both lengths."""


def summary_rows(folders: Sequence[str] = FOLDERS) -> dict[str, list[ForestRow]]:
    """Every group of :data:`GROUPS`, measured on the committed episodes of ``folders``."""
    rows = read_folders(folders)
    return {heading: paired_forest(rows, comparisons) for heading, comparisons in GROUPS.items()}


def render(groups: dict[str, list[ForestRow]]) -> str:
    """The measured differences as one markdown table (points)."""
    out = ["| runs | comparison | All, points [95% CI] | MDD (80%, measured) | seeds |", "|---|---|---|---|---|"]
    for heading, rows in groups.items():
        for r in rows:
            d = r.difference
            out.append(f"| {heading} | {r.comparison.label} | {100 * d.estimate:+.1f} [{100 * d.low:+.1f}, "
                       f"{100 * d.high:+.1f}] | {100 * r.mdd:.1f} | {', '.join(map(str, r.seeds))} |")  # fmt: skip
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table and write the figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "summary_forest.png", help="the PNG to write")
    args = parser.parse_args(argv)
    groups = summary_rows()
    print(render(groups))
    write_forest(args.out, groups, title="ALFWorld, encoder policy on 2 CPU cores: arm minus arm on the same episodes "
                 "(green/red: interval excludes 0)")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
