"""A CSV logger that keeps the metric history of a resumed run.

Lightning's ``CSVLogger`` deletes an existing ``metrics.csv`` when its writer starts (a resumed run with a fixed
``version`` lost every earlier row) and writes rows only every ``flush_logs_every_n_steps`` (a SIGKILL lost the
unflushed ones). :class:`ResumableCSVLogger` keeps the file, writes after every logged step (one iteration is one
step here), and when a resumed run logs an iteration again (one that ran after the last checkpoint and is repeated),
the new rows replace the old ones of that iteration on (by the ``replay_key`` column, ``iteration`` here; rows
without it, such as evaluations, are kept), so the file holds each iteration once, in order. The file is replaced
atomically (a torn write cannot lose the history).
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment

from rlanything_core.environment._io import atomic_write_text

__all__ = ["ResumableCSVLogger"]


def _number(row: dict[str, Any], key: str) -> float:
    """``row[key]`` as a float; NaN when absent or empty (NaN compares False: such rows are always kept)."""
    try:
        return float(row.get(key, "nan"))
    except (TypeError, ValueError):
        return float("nan")


class _AppendingWriter(ExperimentWriter):
    """An ``ExperimentWriter`` that merges into the existing ``metrics.csv`` instead of deleting it."""

    replay_key = "step"

    def _check_log_dir_exists(self) -> None:
        """Keep the previous run's files (the parent deletes ``metrics.csv`` here)."""

    def save(self) -> None:
        """Rewrite ``metrics.csv`` as: earlier rows from steps before the first new one, then the new rows."""
        if not self.metrics:
            return
        old_rows: list[dict[str, Any]] = []
        header: list[str] = []
        if os.path.isfile(self.metrics_file_path):
            with open(self.metrics_file_path, newline="") as handle:
                reader = csv.DictReader(handle)
                old_rows = list(reader)
                header = list(reader.fieldnames or [])
        replayed = [v for v in (_number(m, self.replay_key) for m in self.metrics) if v == v]
        first_new = min(replayed, default=float("inf"))
        kept = [row for row in old_rows if not _number(row, self.replay_key) >= first_new]  # repeats replace
        keys = sorted(set(header) | set(self.metrics_keys) | set().union(*self.metrics))
        self.metrics_keys = keys
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=keys)
        writer.writeheader()
        writer.writerows(kept)
        writer.writerows(self.metrics)
        atomic_write_text(self.metrics_file_path, out.getvalue())
        self.metrics = []


class ResumableCSVLogger(CSVLogger):
    """``CSVLogger`` for resumable runs (see the module docstring); flushed after every step.

    Args:
        replay_key: the column whose repeated values mark repeated work (default ``step``).
        args, kwargs: as ``CSVLogger``.
    """

    def __init__(self, *args: Any, replay_key: str = "step", **kwargs: Any) -> None:
        kwargs.setdefault("flush_logs_every_n_steps", 1)
        super().__init__(*args, **kwargs)
        self.replay_key = replay_key

    @property
    @rank_zero_experiment
    def experiment(self) -> _AppendingWriter:  # type: ignore[override]
        """The writer (created on first use, like the parent's)."""
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(log_dir=self.log_dir)
            self._experiment.replay_key = self.replay_key
        return self._experiment  # type: ignore[return-value]
