"""How much a run's per-step advantages credit the hand-coded expert's steps, by task type, from its step records.

    python -m rlanything_core.analysis.step_credit <run_dir> [<run_dir> ...] [--from-iteration K]

Every ALFWorld training step of a run is recorded with its advantage and a cheap exact label: whether the action is
the expert's next command from that state (``expert_agrees``; :mod:`rlanything_core.loop.step_records`). The *credit*
of a group of steps is the mean advantage of the expert's steps minus that of the others: what the update pushes
toward the expert's actions. Outcome-only credits them only through the episodes they win; a judge whose votes agree
with the expert adds to it, one whose votes are wrong takes from it. The judge's ``P(+1)`` is scored against the same
label (its AUC: 0.5 orders the steps by chance).

The interval is a game bootstrap: games drawn with replacement within each task type (a game's steps are not
independent), 2,000 resamples, seeded.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rlanything_core.analysis.judge_steps import game_resample_weights, weighted_auc

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["StepCredit", "credit", "main", "render", "step_credit"]


@dataclass(frozen=True)
class StepCredit:
    """The credit of one group of steps (see the module docstring); ``judge_auc`` NaN without ``P(+1)``."""

    group: str
    steps: int
    games: int
    agree_rate: float
    credit: float
    low: float
    high: float
    judge_auc: float


def credit(advantages: torch.Tensor, agrees: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mean advantage of the expert's steps minus that of the others, per row of ``weights``.

    Args:
        advantages: ``(N,)`` the steps' advantages.
        agrees: ``(N,)`` bool, ``True`` where the step is the expert's command.
        weights: ``(R, N)`` non-negative step weights (a bootstrap resample per row).

    Returns:
        ``(R,)`` float64; NaN where a row weighs no step of one side.
    """
    a, y = advantages.double(), agrees.bool()
    on, off = weights[:, y], weights[:, ~y]
    mean_on = (on * a[y]).sum(1) / on.sum(1)
    mean_off = (off * a[~y]).sum(1) / off.sum(1)
    return mean_on - mean_off  # 0/0 is NaN: a side with no weight


def step_credit(
    records: pd.DataFrame,
    groups: dict[str, Sequence[str]] | None = None,
    *,
    samples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> list[StepCredit]:
    """The credit of every task type (or of each named group of task types), then of all steps (``all``).

    Args:
        records: :func:`~rlanything_core.loop.step_records.read_step_records` rows (several runs' rows may be
            concatenated); steps without an expert label or an advantage are left out.
        groups: name -> task types; default: one group per task type present.
        samples: resamples of the game bootstrap (stratified by task type).
        seed: its randomness.
        level: the interval's coverage.

    Raises:
        ValueError: no step carries both an expert label and an advantage.
    """
    labelled = records.dropna(subset=["expert_agrees", "advantage"])
    if labelled.empty:
        raise ValueError("records: no step has an expert label and an advantage (a setting without an expert?)")
    types = sorted(labelled["task_type"].unique())
    named = {t: [t] for t in types} if groups is None else {k: list(v) for k, v in groups.items()}
    named["all"] = types
    generator = torch.Generator().manual_seed(seed)
    tail = (1 - level) / 2
    out = []
    for name, members in named.items():
        part = labelled[labelled["task_type"].isin(members)]
        if part.empty:
            continue
        adv = torch.tensor(part["advantage"].to_numpy(), dtype=torch.float64)
        agrees = torch.tensor(part["expert_agrees"].to_numpy(dtype="int64") == 1)
        games, strata = list(part["game"]), list(part["task_type"])
        draws = credit(adv, agrees, game_resample_weights(games, strata, samples=samples, generator=generator))
        draws = draws[torch.isfinite(draws)]
        low, high = (torch.quantile(draws, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
                     if draws.numel() else [float("nan")] * 2)  # fmt: skip
        p_plus = torch.tensor(part["p_plus"].to_numpy(dtype="float64"))
        has_p = torch.isfinite(p_plus)
        judge_auc = (float(weighted_auc(p_plus[has_p], agrees[has_p], torch.ones(int(has_p.sum()))))
                     if bool(has_p.any()) else float("nan"))  # fmt: skip
        out.append(StepCredit(
            group=name, steps=len(part), games=len(set(games)), agree_rate=float(agrees.double().mean()),
            credit=float(credit(adv, agrees, torch.ones(1, len(part), dtype=torch.float64))[0]), low=low, high=high,
            judge_auc=judge_auc,
        ))  # fmt: skip
    return out


def render(name: str, rows: Sequence[StepCredit]) -> str:
    """A markdown table of one run's (or arm's) credits."""
    lines = [f"{name}:", "", "| task types | steps | games | expert's steps | credit [95% CI] | judge AUC |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r.group} | {r.steps} | {r.games} | {100 * r.agree_rate:.1f}% | "
                     f"{r.credit:+.3f} [{r.low:+.3f}, {r.high:+.3f}] | {r.judge_auc:.3f} |")  # fmt: skip
    return "\n".join(lines)


def _evaluation_only(run: Path) -> bool:
    """Whether ``run`` evaluated a policy and trained nothing (its evaluation, no training log, no step records)."""
    trained = (run / "step_records").is_dir() or (run / "logs" / "metrics.csv").is_file()
    return (run / "eval.json").is_file() and not trained


def main(argv: Sequence[str] | None = None) -> None:
    """Print the credit table of every run directory given."""
    from rlanything_core.loop.step_records import read_step_records

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories holding step_records/")
    parser.add_argument("--from-iteration", type=int, default=0, help="only the steps of iterations >= this one")
    args = parser.parse_args(argv)
    for run in args.runs:
        if _evaluation_only(run):  # an ablation's "before" run: a glob over a results folder's runs picks it up
            print(f"{run}: an evaluation without training (no step records): skipped\n")
            continue
        records = read_step_records(run)
        records = records[records["iteration"] >= args.from_iteration]
        print(render(str(run), step_credit(records)) + "\n")


if __name__ == "__main__":
    main()
