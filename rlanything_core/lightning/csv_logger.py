"""A CSV logger that keeps the metric history of a resumed run, each row once and in order.

Lightning's ``CSVLogger`` deletes an existing ``metrics.csv`` when its writer starts (a resumed run with a fixed
``version`` lost every earlier row) and writes rows only every ``flush_logs_every_n_steps`` (a SIGKILL lost the
unflushed ones). :class:`ResumableCSVLogger` keeps the file and writes after every logged step (one iteration is one
step here). Every row has a *position* in the run: a training row that of its ``replay_key`` column (``iteration``), an
evaluation row after ``c`` completed iterations (``eval_key``, ``eval/iteration``) ``c - 0.5``, between the last
training row before it and the next one. When a resumed run logs a position again (an iteration that ran after the last
checkpoint and is repeated, or a final evaluation whose process was killed before it exited), the new rows replace the
old ones from that position on (:func:`merge_rows`), so the file holds each iteration and each evaluation once, in
order. Within one process rows are never dropped, only put in position order (:func:`in_position_order`): Lightning
writes an iteration's row after the hooks of its batch have run, so a judge-only evaluation logged in
``on_train_batch_end`` reaches the logger before the row of the iteration it follows. The ``step`` column is the row's
index in the file (0, 1, 2, ...): unique and without gaps whatever kills and resumes happened (Lightning's own step
repeated where an evaluation and the next iteration shared it, and after a resume). The file is replaced
atomically (a torn write cannot lose the history), and a damaged one is named with what to do
(:func:`read_metrics_csv`), never a raw ``csv.Error`` or ``ValueError``.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment

from rlanything_core.files import CorruptFileError, atomic_write_text

__all__ = ["ResumableCSVLogger", "in_position_order", "merge_rows", "read_metrics", "read_metrics_csv", "row_position"]

_FIX = "move the file aside (a resumed run then starts a new one) or restore it from a backup"


def _number(value: Any) -> float:
    """``value`` as a float; NaN when empty or not a number."""
    try:
        return float(value) if value not in ("", None) else math.nan
    except (TypeError, ValueError):
        return math.nan


def row_position(row: dict[str, Any], replay_key: str, eval_key: str | None) -> float:
    """A row's place in the run: its ``replay_key`` value, else its ``eval_key`` value minus 0.5, else NaN."""
    position = _number(row.get(replay_key))
    if math.isnan(position) and eval_key is not None:
        position = _number(row.get(eval_key)) - 0.5
    return position


def in_position_order(
    rows: Sequence[dict[str, Any]], *, replay_key: str, eval_key: str | None
) -> list[dict[str, Any]]:
    """``rows`` stably sorted by :func:`row_position`; a row without a position stays after the row before it.

    Examples:
        >>> rows = [{"eval/iteration": 1}, {"iteration": 0}, {"note": "x"}, {"iteration": 1}]
        >>> in_position_order(rows, replay_key="iteration", eval_key="eval/iteration")
        [{'iteration': 0}, {'note': 'x'}, {'eval/iteration': 1}, {'iteration': 1}]
    """
    keys: list[float] = []
    for row in rows:
        position = row_position(row, replay_key, eval_key)
        keys.append(position if not math.isnan(position) else (keys[-1] if keys else -math.inf))
    order = sorted(range(len(rows)), key=lambda i: keys[i])
    return [rows[i] for i in order]


def merge_rows(
    old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], *, replay_key: str, eval_key: str | None
) -> list[dict[str, Any]]:
    """The file's rows after ``new`` is logged: old rows placed before the first new position, then ``new``.

    Old rows at or after the first new row's position were logged by work that is now repeated (a resume from an
    earlier checkpoint, or a rerun of the final evaluation): they are dropped. Rows without a position are kept.
    The ``step`` column is renumbered 0, 1, 2, ... in file order, unless it is the ``replay_key`` itself.

    Examples:
        >>> old = [{"iteration": 0}, {"eval/iteration": 1}, {"iteration": 1}, {"eval/iteration": 2}]
        >>> merge_rows(old, [{"eval/iteration": 2, "x": 1}], replay_key="iteration", eval_key="eval/iteration")[-1]
        {'eval/iteration': 2, 'x': 1, 'step': 3}
    """
    positions = [row_position(r, replay_key, eval_key) for r in new]
    first_new = min((p for p in positions if not math.isnan(p)), default=math.inf)
    kept = [r for r in old if not row_position(r, replay_key, eval_key) >= first_new]  # NaN compares False: kept
    if replay_key == "step":
        return [*kept, *new]
    return [{**r, "step": i} for i, r in enumerate([*kept, *new])]


def read_metrics_csv(
    path: str | os.PathLike[str], *, numeric: Sequence[str] = ()
) -> tuple[list[str], list[dict[str, Any]]]:
    """The header and rows of a ``metrics.csv``; any damage is a one-line :class:`CorruptFileError` naming the file.

    Args:
        path: the file.
        numeric: columns that must hold a number (or be empty) in every row.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorruptFileError: not UTF-8, NUL bytes, not CSV (a stray or unterminated quote), a row with more cells than the
            header, or a non-number in a ``numeric`` column; the message gives the row and what to do.
    """
    target = Path(path)
    try:
        text = target.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptFileError(f"{target}: not UTF-8 text (invalid byte at offset {err.start}); {_FIX}") from None
    if "\0" in text:
        raise CorruptFileError(f"{target}: holds NUL bytes at offset {text.index(chr(0))} (a torn write?); {_FIX}")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), restkey="\0extra", strict=True)
        rows = list(reader)
        header = list(reader.fieldnames or [])
    except csv.Error as err:
        raise CorruptFileError(f"{target}: not a valid CSV file ({err}); {_FIX}") from None
    for n, row in enumerate(rows, start=2):  # line numbers as an editor shows them (the header is line 1)
        if "\0extra" in row:
            raise CorruptFileError(f"{target}: line {n} has more cells than the header's {len(header)}; {_FIX}")
        for key in numeric:
            value = row.get(key)
            if value not in ("", None) and math.isnan(_number(value)) and value.strip().lower() != "nan":
                raise CorruptFileError(f"{target}: line {n}, column {key!r}: {value[:40]!r} is not a number; {_FIX}")
    return header, rows


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, float]]:
    """Every row of a ``metrics.csv`` as numbers (empty cells dropped); [] when the file is absent.

    Raises:
        CorruptFileError: the file is damaged or a cell is not a number (see :func:`read_metrics_csv`).
    """
    if not Path(path).is_file():
        return []
    _, rows = read_metrics_csv(path)
    out = []
    for n, row in enumerate(rows, start=2):
        values: dict[str, float] = {}
        for key, value in row.items():
            if value in ("", None):
                continue
            number = _number(value)
            if math.isnan(number) and value.strip().lower() != "nan":
                raise CorruptFileError(f"{path}: line {n}, column {key!r}: {value[:40]!r} is not a number; {_FIX}")
            values[key] = number
        out.append(values)
    return out


class _AppendingWriter(ExperimentWriter):
    """An ``ExperimentWriter`` that merges into the existing ``metrics.csv`` instead of deleting it."""

    replay_key = "step"
    eval_key: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._previous: tuple[list[str], list[dict[str, Any]]] | None = None  # earlier processes' file, read once
        self._session: list[dict[str, Any]] = []  # every row this process logged

    def _check_log_dir_exists(self) -> None:
        """Keep the previous run's files (the parent deletes ``metrics.csv`` here)."""

    def save(self) -> None:
        """Rewrite ``metrics.csv``: earlier processes' rows merged with this one's (:func:`merge_rows`)."""
        if not self.metrics:
            return
        if self._previous is None:
            self._previous = [], []
            if os.path.isfile(self.metrics_file_path):
                keys = [k for k in (self.replay_key, self.eval_key) if k is not None]
                self._previous = read_metrics_csv(self.metrics_file_path, numeric=keys)
        header, old_rows = self._previous
        self._session.extend(self.metrics)
        session = in_position_order(self._session, replay_key=self.replay_key, eval_key=self.eval_key)
        rows = merge_rows(old_rows, session, replay_key=self.replay_key, eval_key=self.eval_key)
        keys = sorted(set(header) | set(self.metrics_keys) | set().union(*self.metrics))
        self.metrics_keys = keys
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(self.metrics_file_path, out.getvalue())
        self.metrics = []


class ResumableCSVLogger(CSVLogger):
    """``CSVLogger`` for resumable runs (see the module docstring); flushed after every step.

    Args:
        replay_key: the column whose repeated values mark repeated work (default ``step``).
        eval_key: the column of evaluation rows holding the completed iterations they follow (``None``: none).
        args, kwargs: as ``CSVLogger``.
    """

    def __init__(self, *args: Any, replay_key: str = "step", eval_key: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("flush_logs_every_n_steps", 1)
        super().__init__(*args, **kwargs)
        self.replay_key = replay_key
        self.eval_key = eval_key

    @property
    @rank_zero_experiment
    def experiment(self) -> _AppendingWriter:  # type: ignore[override]
        """The writer (created on first use, like the parent's)."""
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(log_dir=self.log_dir)
            self._experiment.replay_key = self.replay_key
            self._experiment.eval_key = self.eval_key
        return self._experiment  # type: ignore[return-value]
