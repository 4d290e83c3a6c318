"""Per-step training records: what every training step of a run was, voted, rewarded and labelled, by iteration.

The data flows one way: collected -> judged -> rewarded -> recorded. The driver hands the judged episodes and the
``(B, S)`` step reward and advantages that ``build_iteration`` computed (nothing is recomputed here) to a
:class:`StepRecorder`, before the rows leave for the update; the update never sees the records.

One row per step (``COLUMNS``): the iteration, task group, game, task type, step index, action, the ``m`` votes and
``P(+1)``, ``R``, the advantage, the outcome, and a cheap exact label: whether the action is the hand-coded expert's
next command from that state (``expert_agrees``; ALFWorld, :class:`StepLabeller`). Files are
``<run_dir>/step_records/iter_<k>_rank<r>.csv.gz``, each written atomically: a resumed run that replays iteration ``k``
replaces that file, so rows are neither lost nor duplicated. :func:`read_step_records` reads a run's records.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from torch import Tensor

from rlanything_core.files import atomic_write_bytes
from rlanything_core.records import Episode

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "RECORDS_DIR", "StepLabeller", "StepRecorder", "read_step_records", "step_record_rows"]

RECORDS_DIR = "step_records"
"""The records' folder inside a run directory."""

COLUMNS = (
    "iteration", "rank", "group", "rollout", "game", "task_type", "step", "action", "votes", "vote_mean", "p_plus",
    "reward", "advantage", "outcome", "expert_action", "expert_agrees",
)  # fmt: skip
"""The columns of a step record, in file order. ``votes``: the ``m`` votes as ``+1``/``-1``/``0`` (format failure)
separated by spaces (empty without a judge); ``p_plus``: the mean ``P(+1)`` the votes were drawn from (NaN where the
sampler does not know it); ``reward``: ``R`` (NaN without votes); ``expert_agrees``: 1 / 0, empty where the expert
could not label the state (it gave up there) or the setting has no expert."""

_FILE = re.compile(r"^iter_(\d+)_rank(\d+)\.csv\.gz$")


class StepLabeller(Protocol):
    """A setting's cheap exact step label: the reference agent's command at every state of played episodes."""

    def task_type(self, task: Any) -> str:
        """The task type of an environment task (e.g. ALFWorld's ``pick_heat_then_place_in_recep``)."""
        ...

    def reference_actions(self, items: Sequence[tuple[Any, Sequence[str]]]) -> list[list[str | None]]:
        """For each ``(environment task, executed commands)``, the reference command at each state (``None``: none)."""
        ...


def _finite(x: float) -> str:
    return "" if x is None or math.isnan(x) else repr(float(x))


def step_record_rows(
    episodes: Sequence[Episode],
    *,
    iteration: int,
    rank: int,
    advantages: Tensor,
    step_reward: Tensor | None,
    task_types: Sequence[str],
    reference: Sequence[Sequence[str | None]] | None,
) -> list[dict[str, Any]]:
    """One record per step of ``episodes`` (rollout ``b`` is row ``b`` of the ``(B, S)`` grids).

    Args:
        episodes: the judged episodes, in the order the iteration's batch was built from.
        iteration: the iteration.
        rank: the process that collected them.
        advantages: ``(B, S)`` the policy's advantages.
        step_reward: ``(B, S)`` ``R``, or ``None`` (no votes).
        task_types: one per episode.
        reference: one list per episode of the reference command at each step, or ``None`` (no labeller).

    Raises:
        ValueError: the grids or lists do not match the episodes.
    """
    b = len(episodes)
    if advantages.shape[0] != b or (step_reward is not None and step_reward.shape[0] != b):
        raise ValueError(f"advantages: expected {b} rows (one per episode), got {tuple(advantages.shape)}")
    if len(task_types) != b or (reference is not None and len(reference) != b):
        raise ValueError(f"task_types, reference: expected one entry per episode ({b})")
    adv = advantages.detach().double().cpu().tolist()
    rew = None if step_reward is None else step_reward.detach().double().cpu().tolist()
    seen: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    for i, e in enumerate(episodes):
        j = seen.get(e.group_id, 0)
        seen[e.group_id] = j + 1
        ref = list(reference[i]) if reference is not None else []
        for t, s in enumerate(e.steps):
            votes = [v.vote for v in s.judge]
            probs = [v.p_plus for v in s.judge if v.p_plus is not None]
            expert = ref[t] if t < len(ref) else None
            out.append({
                "iteration": iteration, "rank": rank, "group": e.group_id, "rollout": j, "game": e.task_id,
                "task_type": task_types[i], "step": t, "action": s.action, "votes": " ".join(map(str, votes)),
                "vote_mean": _finite(sum(votes) / len(votes)) if votes else "",
                "p_plus": _finite(sum(probs) / len(probs)) if probs else "",
                "reward": "" if rew is None else _finite(rew[i][t]), "advantage": _finite(adv[i][t]),
                "outcome": e.outcome, "expert_action": "" if expert is None else expert,
                "expert_agrees": "" if expert is None else int(expert == s.action),
            })  # fmt: skip
    return out


class StepRecorder:
    """Writes an iteration's step records to ``<run_dir>/step_records`` (one gzip CSV per iteration and rank).

    Args:
        run_dir: the run directory.
        labeller: the setting's reference agent (ALFWorld's hand-coded expert), or ``None``: no expert label.
    """

    def __init__(self, run_dir: str | Path, labeller: StepLabeller | None = None) -> None:
        self.directory = Path(run_dir) / RECORDS_DIR
        self.labeller = labeller

    def path(self, iteration: int, rank: int) -> Path:
        """The file of ``iteration``'s records collected by ``rank``."""
        return self.directory / f"iter_{iteration:06d}_rank{rank}.csv.gz"

    def record(
        self,
        episodes: Sequence[Episode],
        env_tasks: Sequence[Any],
        *,
        iteration: int,
        rank: int,
        advantages: Tensor,
        step_reward: Tensor | None,
    ) -> Path:
        """Label the steps (the labeller replays each episode), build the rows, write them atomically; the file."""
        if len(env_tasks) != len(episodes):
            raise ValueError(f"env_tasks: expected one per episode ({len(episodes)}), got {len(env_tasks)}")
        labeller = self.labeller
        types = [labeller.task_type(t) for t in env_tasks] if labeller is not None else [""] * len(episodes)
        reference = None
        if labeller is not None:
            played = [(t, [s.action for s in e.steps]) for t, e in zip(env_tasks, episodes)]
            reference = labeller.reference_actions(played)
        rows = step_record_rows(episodes, iteration=iteration, rank=rank, advantages=advantages,
                                step_reward=step_reward, task_types=types, reference=reference)  # fmt: skip
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        # mtime=0: the same records give the same bytes (a replayed iteration writes an identical file)
        return atomic_write_bytes(self.path(iteration, rank), gzip.compress(text.getvalue().encode(), mtime=0))


def read_step_records(run_dir: str | Path) -> pd.DataFrame:
    """Every step record of a run, one row per training step, ordered by iteration, rank, group, rollout and step.

    Columns as :data:`COLUMNS`, typed: ``votes`` a tuple of ints per row, ``vote_mean``, ``p_plus``, ``reward``,
    ``advantage``, ``outcome`` floats (NaN where absent), ``expert_agrees`` a nullable ``Int8`` (``<NA>`` where the
    expert could not label the state), ``expert_action`` ``None`` where absent.

    Args:
        run_dir: the run directory (holding ``step_records/``).

    Raises:
        ValueError: ``run_dir`` holds no step records, or a file that is not one.
    """
    import pandas as pd

    directory = Path(run_dir) / RECORDS_DIR
    files = sorted(p for p in directory.glob("*.csv.gz")) if directory.is_dir() else []
    if not files:
        raise ValueError(f"run_dir: no step records in {directory} (runs write them since step records exist)")
    frames = []
    for path in files:
        if not _FILE.match(path.name):
            raise ValueError(f"run_dir: {path} is not a step-record file (iter_<k>_rank<r>.csv.gz)")
        frames.append(pd.read_csv(path, dtype={"votes": str, "expert_action": str, "action": str, "game": str,
                                               "task_type": str}, keep_default_na=False, na_values={
            c: [""] for c in ("vote_mean", "p_plus", "reward", "advantage", "expert_agrees")}))  # fmt: skip
    df = pd.concat(frames, ignore_index=True)
    if list(df.columns) != list(COLUMNS):
        raise ValueError(f"run_dir: the step records in {directory} have columns {list(df.columns)}, not {COLUMNS}")
    df["votes"] = [tuple(int(v) for v in s.split()) for s in df["votes"]]
    df["expert_action"] = pd.Series([a if a else None for a in df["expert_action"]], dtype=object)
    df["expert_agrees"] = df["expert_agrees"].astype("Int8")
    for c in ("vote_mean", "p_plus", "reward", "advantage", "outcome"):
        df[c] = df[c].astype(float)
    return df.sort_values(["iteration", "rank", "group", "rollout", "step"], kind="stable").reset_index(drop=True)
