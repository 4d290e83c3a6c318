"""Success rates of an ablation's committed ``episodes.csv`` broken down by seed, split and task type.

    python -m rlanything_core.analysis.breakdown experiments/results/alfworld/hard [--reference policy_judge]
    python -m rlanything_core.analysis.breakdown experiments/results/alfworld/full \
        lr3e-4=experiments/results/alfworld/judge_study/full_judge_lr3e-4 --reference outcome_only

The table (``table.md``) gives each arm's mean over seeds and the paired differences with their intervals; this shows
what the means hide: whether every seed moved the same way, and which task types moved. An ALFWorld game's type is
the part of its id before the first ``-`` (``pick_clean_then_place_in_recep-...``). ``--reference`` adds every arm's
paired difference from another arm than outcome-only, pooled over both splits, with the table's seed-level interval
(``stats.hierarchical_bootstrap_difference``).

Several folders can be read at once, so that a variant run on its own (one arm, other settings) is paired with a
profile's arms: ``NAME=DIR`` renames that folder's arms ``<arm> (NAME)``. The pairs are (training seed, split, game,
run): an ablation seeds its evaluation episodes by (``eval.seed``, training seed), so two folders with the same
evaluation settings play the same episodes (their "before" rows then agree game by game; the printout shows it).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rlanything_core.analysis.power import observed_noise
from rlanything_core.analysis.stats import hierarchical_bootstrap_difference
from rlanything_core.analysis.table import LABELS, REFERENCE

__all__ = [
    "TASK_GROUPS", "by_seed_and_split", "by_task_type", "paired_by_group", "paired_differences", "read_episodes",
    "read_folders", "render",
]  # fmt: skip

TASK_GROUPS: dict[str, tuple[str, ...]] = {
    "clean/cool/heat": (
        "pick_clean_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_heat_then_place_in_recep",
    ),
    "look + pick-and-place": ("look_at_obj_in_light", "pick_and_place_simple"),
    "pick-two": ("pick_two_obj_and_place",),
}  # fmt: skip
"""The pre-registered subgroups of ALFWorld's task types (``docs/results.md``, "Pre-registered"): the multi-stage
kitchen tasks where the judged arms lost, beside the rest."""


def _arms(keys: Iterable[str]) -> list[str]:
    """The arms in the table's order (``table.LABELS``), unknown ones after."""
    order = list(LABELS)
    return sorted(set(keys), key=lambda a: (order.index(a) if a in order else len(order), a))


def read_folders(specs: Sequence[str]) -> list[dict[str, str]]:
    """The ``episodes.csv`` rows of every ``DIR`` or ``NAME=DIR``; a named folder's arms become ``<arm> (NAME)``."""
    rows: list[dict[str, str]] = []
    for spec in specs:
        named = "=" in spec and not Path(spec).is_dir()  # a folder whose path holds "=" is read as a folder
        name, _, folder = spec.partition("=") if named else ("", "", spec)
        for row in read_episodes(Path(folder) / "episodes.csv"):
            rows.append({**row, "arm": f"{row['arm']} ({name})"} if name else row)
    return rows


def read_episodes(path: Path) -> list[dict[str, str]]:
    """The rows of an ``episodes.csv`` (see ``results.EPISODE_COLUMNS``).

    Raises:
        ValueError: the file lacks a column this breakdown needs.
    """
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    missing = {"arm", "seed", "split", "game", "success"} - set(rows[0] if rows else {})
    if missing:
        raise ValueError(f"{path}: expected the columns of episodes.csv, missing {sorted(missing)}")
    return rows


def _task_type(row: Mapping[str, str]) -> str:
    """An ALFWorld game's task type: the part of its id before the first ``-``."""
    return row["game"].split("-", 1)[0]


def _rates(rows: Iterable[Mapping[str, str]], key: tuple[str, ...]) -> dict[tuple[str, ...], tuple[float, int]]:
    """Success rate (%) and episode count per value of the columns ``key`` (``type``: the game's task type)."""
    won: dict[tuple[str, ...], int] = defaultdict(int)
    played: dict[tuple[str, ...], int] = defaultdict(int)
    for row in rows:
        values = tuple(_task_type(row) if k == "type" else row[k] for k in key)
        won[values] += int(row["success"])
        played[values] += 1
    return {k: (100.0 * won[k] / played[k], played[k]) for k in sorted(played)}


def by_seed_and_split(rows: Sequence[Mapping[str, str]]) -> list[list[str]]:
    """One line per (seed, split): every arm's success (%), and each arm minus outcome-only on the same episodes."""
    rates = _rates(rows, ("seed", "split", "arm"))
    arms = _arms(k[2] for k in rates)
    cells = sorted({k[:2] for k in rates}, key=lambda k: (int(k[0]), k[1]))
    lines = [["seed", "split", *arms, *[f"{a} - {REFERENCE}" for a in arms if a != REFERENCE]]]
    for seed, split in cells:
        values = {a: rates.get((seed, split, a), (float("nan"), 0))[0] for a in arms}
        ref = values.get(REFERENCE, float("nan"))
        lines.append([seed, split, *[f"{values[a]:.1f}" for a in arms],
                      *[f"{values[a] - ref:+.1f}" for a in arms if a != REFERENCE]])
    return lines


def by_task_type(rows: Sequence[Mapping[str, str]]) -> list[list[str]]:
    """One line per task type: every arm's success (%) over all seeds and splits, with the episode count."""
    rates = _rates(rows, ("type", "arm"))
    arms = _arms(k[1] for k in rates)
    lines = [["task type", *arms, "episodes per arm"]]
    for task_type in sorted({k[0] for k in rates}):
        counts = {rates[(task_type, a)][1] for a in arms if (task_type, a) in rates}
        lines.append([task_type, *[f"{rates[(task_type, a)][0]:.1f}" if (task_type, a) in rates else "-"
                                   for a in arms], "/".join(str(c) for c in sorted(counts))])
    return lines


def _success(rows: Iterable[Mapping[str, str]]) -> dict[str, dict[tuple[int, str], float]]:
    """Success by arm, then by pairing unit ``(training seed, "split/game/run")``: what every difference pairs."""
    success: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for row in rows:
        unit = (int(row["seed"]), f"{row['split']}/{row['game']}/{row.get('run', '0')}")
        success[row["arm"]][unit] = float(row["success"])
    return success


def _shared_seeds(success: Mapping[str, Mapping[tuple[int, str], float]], arm: str, reference: str) -> list[int]:
    seeds = sorted({s for s, _ in success[arm]} & {s for s, _ in success[reference]})
    if not seeds:
        raise ValueError(f"arm {arm!r}: no seed in common with {reference!r}")
    return seeds


def _difference(
    mine: Mapping[tuple[int, str], float], theirs: Mapping[tuple[int, str], float], seed: int
) -> tuple[str, str, str]:
    """``(difference in points [95% CI], MDD, paired episodes)`` of ``mine - theirs`` (seed-level bootstrap)."""
    d = hierarchical_bootstrap_difference(mine, theirs, seed=seed)
    interval = f"{100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
    return interval, f"{100 * observed_noise(mine, theirs).mdd():.1f}", str(d.units)


def paired_differences(rows: Sequence[Mapping[str, str]], reference: str, *, seed: int = 0) -> list[list[str]]:
    """Every other arm minus ``reference`` on the same (seed, split, game, run) episodes, both splits pooled.

    An arm run on fewer seeds (a variant run on its own) is paired on the seeds both have, named in the last column.
    The MDD column is the smallest difference these pairs detect with 80% power (two-sided 5%), from their own
    within-seed and between-seed noise (``power.observed_noise``; the seed spread is estimated from the
    seeds shown, so with two or three seeds it is rough).

    Raises:
        ValueError: ``reference`` is not an arm of ``rows``; an arm shares no seed with it; a shared seed's episodes
            differ (other evaluation settings).
    """
    # the pooled difference is paired_by_group's "All" line, without its group column
    return [[line[0], *line[2:]] for line in paired_by_group(rows, reference, groups={}, seed=seed)]


def paired_by_group(
    rows: Sequence[Mapping[str, str]],
    reference: str,
    *,
    groups: Mapping[str, Sequence[str]] = TASK_GROUPS,
    seed: int = 0,
) -> list[list[str]]:
    """Every other arm minus ``reference`` on all games and within each group of task types, on the same episodes.

    One line per (arm, group), ``All`` first: the pre-registered experiments' primary comparison and subgroups. The
    interval, MDD and pairing are those of :func:`paired_differences`, restricted to the group's games (a game's task
    type is the part of its id before the first ``-``).

    Raises:
        ValueError: as :func:`paired_differences`; a group has no episode of the arm or of ``reference``.
    """
    success = _success(rows)
    if reference not in success:
        raise ValueError(f"reference: expected one of the arms {_arms(success)}, got {reference!r}")
    by_group = {"All": success}
    by_group.update({g: _success(r for r in rows if _task_type(r) in types) for g, types in groups.items()})
    lines = [["arm", "task types", f"minus {reference}, points [95% CI]", "MDD (80%, measured)", "paired episodes",
              "seeds"]]  # fmt: skip
    for arm in _arms(a for a in success if a != reference):
        seeds = _shared_seeds(success, arm, reference)
        for group, within in by_group.items():
            mine, theirs = ({u: v for u, v in within.get(a, {}).items() if u[0] in seeds} for a in (arm, reference))
            if not mine or not theirs:
                raise ValueError(f"groups[{group!r}]: arm {arm!r} or {reference!r} has no episode of these task types")
            lines.append([arm, group, *_difference(mine, theirs, seed), ", ".join(map(str, seeds))])
    return lines


def render(lines: Sequence[Sequence[str]]) -> str:
    """A markdown table."""
    head, *body = lines
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(line) + " |" for line in body]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """Print both breakdowns of ``<results dir>/episodes.csv``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="ablation results folders (holding episodes.csv): DIR or NAME=DIR")
    parser.add_argument("--reference", help="also print every arm's paired difference from this arm")
    parser.add_argument("--groups", action="store_true",
                        help="with --reference: also within the pre-registered groups of task types (TASK_GROUPS)")
    args = parser.parse_args(argv)
    rows = read_folders(args.results)
    print(f"Success (%) per seed and split, {', '.join(args.results)}:\n")
    print(render(by_seed_and_split(rows)))
    print("\nSuccess (%) per task type, all seeds and splits:\n")
    print(render(by_task_type(rows)))
    if args.reference:
        print(f"\nPaired differences from {args.reference}, both splits pooled (seed-level bootstrap, 10,000):\n")
        print(render(paired_differences(rows, args.reference)))
        if args.groups:
            print(f"\nPaired differences from {args.reference} by group of task types (the pre-registered ones):\n")
            print(render(paired_by_group(rows, args.reference)))


if __name__ == "__main__":
    main()
