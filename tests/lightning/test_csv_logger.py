"""ResumableCSVLogger: a rerun appends to metrics.csv; a repeated iteration replaces its rows; nothing else is lost."""

from __future__ import annotations

import csv
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger

from rlanything_core.lightning.csv_logger import ResumableCSVLogger


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_resumed_run_appends_and_replaces_only_repeated_iterations(tmp_path: Path) -> None:
    first = ResumableCSVLogger(str(tmp_path), name="logs", version="", replay_key="iteration")
    first.log_metrics({"iteration": 0, "loss": 1.0}, step=0)
    first.log_metrics({"iteration": 1, "loss": 0.9}, step=1)
    first.log_metrics({"eval/success": 0.5}, step=2)  # an evaluation row: no iteration column
    first.log_metrics({"iteration": 2, "loss": 0.8}, step=2)  # ran, then the process was killed before its checkpoint
    path = tmp_path / "logs" / "metrics.csv"
    assert [r["iteration"] for r in _rows(path)] == ["0", "1", "", "2"]  # flushed every step: nothing lost to a kill

    resumed = ResumableCSVLogger(str(tmp_path), name="logs", version="", replay_key="iteration")
    resumed.log_metrics({"iteration": 2, "loss": 0.7, "judge/loss": 0.1}, step=2)  # iteration 2 repeated
    resumed.log_metrics({"iteration": 3, "loss": 0.6}, step=3)
    resumed.save()
    rows = _rows(path)
    assert [(r["iteration"], r["loss"]) for r in rows] == [("0", "1.0"), ("1", "0.9"), ("", ""), ("2", "0.7"),
                                                           ("3", "0.6")]  # fmt: skip
    assert rows[2]["eval/success"] == "0.5" and rows[3]["judge/loss"] == "0.1"  # the header grew with a new key
    assert not list(path.parent.glob(".tmp-*"))


def test_lightnings_own_logger_erases_the_history(tmp_path: Path) -> None:
    """Why the subclass exists: CSVLogger with a fixed version deletes metrics.csv when a rerun starts."""
    first = CSVLogger(str(tmp_path), name="logs", version="")
    first.log_metrics({"loss": 1.0}, step=0)
    first.save()
    again = CSVLogger(str(tmp_path), name="logs", version="")
    again.log_metrics({"loss": 0.5}, step=1)
    again.save()
    assert [r["step"] for r in _rows(tmp_path / "logs" / "metrics.csv")] == ["1"]
