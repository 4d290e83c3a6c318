"""Training success against the frozen warm start on the same tasks: does RL make the policy better at its own games?

    python -m scripts.training_gain --frozen experiments/results/alfworld/training_gain/runs/frozen_seed* \
        --arm outcome_only experiments/results/alfworld/full/runs/outcome_only_seed* [--blocks 12]

An arm's training success per iteration mixes what the policy learned with which tasks were drawn: ``pool.sample``
draws each iteration's tasks by (seed, iteration), and four draws of a six-type pool differ in difficulty by tens of
points. Comparing a run's later iterations with its earlier ones therefore compares different tasks. A *frozen* run (the
arm's config with a learning rate of 1e-12: the same draws, the same episode seeds, weights that do not move) plays the
tasks each iteration drew with the warm start, so ``arm - frozen``, iteration by iteration, is what the updates
changed on those tasks. The first iteration is played before any update: both runs must agree on it exactly (success
and steps), which checks the pairing.

Environment adaptation changes the pool, and with it the draws: an arm's iterations after its first accepted rewrite
are left out (and counted in the printout).

Each block of iterations gets the mean paired difference with a seed-level interval (seeds, then their iterations:
``rlanything_core.analysis.stats.hierarchical_bootstrap_difference``). A run's seed is its ``config.yaml``'s ``seed``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from rlanything_core.analysis.results import read_arm_run
from rlanything_core.analysis.stats import PairedDifference, hierarchical_bootstrap_difference

__all__ = ["Run", "paired_blocks", "read_run", "render"]


@dataclass(frozen=True)
class Run:
    """One run's training iterations: success rate and environment steps per iteration, in order."""

    seed: int
    success: tuple[float, ...]
    steps: tuple[float, ...]
    paired_iterations: int  # the iterations whose draws match a frozen run's (before the first accepted rewrite)


def read_run(run_dir: Path) -> Run:
    """A run folder's ``config.yaml`` seed and ``logs/metrics.csv`` training rows.

    Raises:
        ValueError: no config, or no training rows.
    """
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise ValueError(f"{run_dir}: no config.yaml (expected a run folder of train.py or ablate.py)")
    seed = int(yaml.safe_load(config.read_text())["seed"])
    run = read_arm_run("trained", seed, run_dir)  # the table's reader: the same metric keys, read in one place
    cumulative, success = run.curve
    if not success:
        raise ValueError(f"{run_dir}: no training iterations in logs/metrics.csv")
    steps = tuple(b - a for a, b in zip([0.0, *cumulative], cumulative, strict=False))
    # the draws of the iteration after the first accepted rewrite come from a new pool
    paired = next((i + 1 for i, total in enumerate(run.accepted) if total > 0), len(success))
    return Run(seed, tuple(success), steps, paired)


def paired_blocks(
    arm: Sequence[Run], frozen: Mapping[int, Run], block: int, *, samples: int = 10_000
) -> list[tuple[str, PairedDifference, int]]:
    """``arm - frozen`` success (points) per block of ``block`` iterations, paired by (seed, iteration), and over all
    of them (when there is more than one block): ``(iterations, difference, seeds)`` each.

    Raises:
        ValueError: a seed without a frozen run, or a first iteration that differs from the frozen run's (not the
            same tasks and episodes: another pool, seed or warm start).
    """
    diffs: dict[tuple[int, int], tuple[float, float]] = {}
    for run in arm:
        ref = frozen.get(run.seed)
        if ref is None:
            raise ValueError(f"seed {run.seed}: no frozen run (give one per seed of the arm)")
        if (run.success[0], run.steps[0]) != (ref.success[0], ref.steps[0]):
            raise ValueError(
                f"seed {run.seed}: the first iteration differs from the frozen run's (success {run.success[0]} vs "
                f"{ref.success[0]}, steps {run.steps[0]} vs {ref.steps[0]}): not the same tasks and episodes"
            )
        for i in range(min(run.paired_iterations, len(ref.success))):
            diffs[(run.seed, i)] = (run.success[i], ref.success[i])
    last = max(i for _, i in diffs) + 1
    out: list[tuple[str, PairedDifference, int]] = []
    spans = [(start, min(start + block, last)) for start in range(0, last, block)] + [(0, last)]
    for start, end in spans if len(spans) > 2 else spans[:1]:
        units = {(s, f"{i}"): v for (s, i), v in diffs.items() if start <= i < end}
        if not units:
            continue
        result = hierarchical_bootstrap_difference(
            {u: 100 * a for u, (a, _) in units.items()}, {u: 100 * b for u, (_, b) in units.items()}, samples=samples
        )
        out.append((f"{start + 1}-{end}", result, len({seed for seed, _ in units})))
    return out


def render(name: str, arm: Sequence[Run], frozen: Mapping[int, Run], block: int) -> str:
    """Markdown rows: the arm's paired differences per block, and what was left out."""
    lines = []
    for span, d, seeds in paired_blocks(arm, frozen, block):
        lines.append(f"| {name} | {span} | {d.estimate:+.1f} [{d.low:+.1f}, {d.high:+.1f}] | {d.units} | {seeds} |")
    left = sum(min(len(r.success), len(frozen[r.seed].success)) - r.paired_iterations for r in arm)
    if left > 0:
        lines.append(f"| {name} | (left out after a rewrite) | {left} iterations | | |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--frozen", nargs="+", type=Path, required=True, help="the frozen runs, one per seed")
    parser.add_argument("--arm", nargs="+", action="append", required=True, metavar="NAME DIR",
                        help="an arm's name, then its runs: NAME DIR [DIR ...] (repeat --arm)")  # fmt: skip
    parser.add_argument("--blocks", type=int, default=12, help="iterations per block (default 12)")
    args = parser.parse_args(argv)
    if args.blocks < 1:
        parser.error(f"--blocks: expected >= 1, got {args.blocks}")
    try:
        frozen_runs = [read_run(d) for d in args.frozen]
        frozen = {r.seed: r for r in frozen_runs}
        if len(frozen) != len(frozen_runs):
            raise ValueError("--frozen: two runs have the same seed")
        arms = []
        for spec in args.arm:
            if len(spec) < 2:
                raise ValueError(f"--arm {spec[0]}: expected NAME DIR [DIR ...], got no run folder")
            arms.append((spec[0], [read_run(Path(d)) for d in spec[1:]]))
        tables = [render(name, runs, frozen, args.blocks) for name, runs in arms]
    except ValueError as err:
        print(f"ERROR: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print("| arm | iterations | training success, arm - frozen (points) [95% CI] | pairs | seeds |")
    print("|---|---|---|---|---|")
    print("\n".join(tables))


if __name__ == "__main__":
    main()
