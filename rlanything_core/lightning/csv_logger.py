"""A CSV logger that keeps the metric history of a resumed run.

Lightning's ``CSVLogger`` deletes an existing ``metrics.csv`` when its writer starts (a resumed run with a fixed
``version`` lost every earlier row) and writes rows only every ``flush_logs_every_n_steps`` (a SIGKILL lost the
unflushed ones). :class:`ResumableCSVLogger` keeps the file, writes after every logged step (one iteration is one
step here), and when a resumed run logs a step again (an iteration that ran after the last checkpoint and is
repeated), the new rows replace the old ones from that step on, so the file holds each step once, in order. The
file is replaced atomically (a torn write cannot lose the history).
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


def _step(row: dict[str, Any]) -> float:
    try:
        return float(row.get("step", "nan"))
    except (TypeError, ValueError):
        return float("nan")


class _AppendingWriter(ExperimentWriter):
    """An ``ExperimentWriter`` that merges into the existing ``metrics.csv`` instead of deleting it."""

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
        first_new = min(_step(m) for m in self.metrics)
        kept = [row for row in old_rows if _step(row) < first_new]  # a repeated step replaces its old rows
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
    """``CSVLogger`` for resumable runs (see the module docstring); same arguments, flushed after every step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("flush_logs_every_n_steps", 1)
        super().__init__(*args, **kwargs)

    @property
    @rank_zero_experiment
    def experiment(self) -> _AppendingWriter:  # type: ignore[override]
        """The writer (created on first use, like the parent's)."""
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(log_dir=self.log_dir)
        return self._experiment  # type: ignore[return-value]
