"""A run's last evaluation, episode by episode: ``<run_dir>/eval_outcomes.json`` (what the paired statistics read).

``train.py`` writes it after the final evaluation of a fit (and after an ``eval_only`` evaluation); the ablation reads
it per arm and seed and pairs the episodes by (split, game, run). Evaluators that keep no per-episode outcomes
(coding) write nothing, and the ablation's paired columns then say so.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from rlanything_core.files import CorruptFileError, atomic_write_json, read_json

__all__ = [
    "EVAL_FILE",
    "OUTCOMES_FILE",
    "read_eval_metrics",
    "read_eval_outcomes",
    "read_outcomes_iteration",
    "write_eval_outcomes",
]

EVAL_FILE = "eval.json"
OUTCOMES_FILE = "eval_outcomes.json"
_FIELDS = ("split", "task_id", "run", "won", "steps")
_FIX = "delete it and rerun the same command (train.py evaluates again; the ablation reruns that evaluation)"


def read_eval_metrics(run_dir: Path) -> dict[str, float]:
    """The metrics of an ``eval_only`` run (``<run_dir>/eval.json``: metric name -> number).

    Raises:
        FileNotFoundError: the run wrote no ``eval.json``.
        CorruptFileError: the file is damaged, or a value is not a number (one line: the file, what, what to do).
    """
    path = run_dir / EVAL_FILE
    data = read_json(path, fix=_FIX)
    bad = next((k for k, v in data.items() if isinstance(v, bool) or not isinstance(v, int | float)), None)
    if bad is not None:
        raise CorruptFileError(f"{path}: {bad!r} is {data[bad]!r}, not a number; {_FIX}")
    return {str(k): float(v) for k, v in data.items()}


def write_eval_outcomes(run_dir: Path, evaluator: Any, iteration: int) -> bool:
    """Write ``evaluator.last_outcomes`` (after ``iteration`` completed iterations) atomically; False if none."""
    outcomes = getattr(evaluator, "last_outcomes", None)
    if not outcomes:
        return False
    atomic_write_json(run_dir / OUTCOMES_FILE, {"iteration": iteration, "outcomes": [asdict(o) for o in outcomes]})
    return True


def read_eval_outcomes(run_dir: Path) -> list[dict[str, Any]] | None:
    """The episodes of ``run_dir``'s last evaluation (dicts with ``split, task_id, run, won, steps``), or None.

    Raises:
        CorruptFileError: the file exists but is damaged or not an outcomes record (names the file, what is missing
            and what to do).
    """
    path = run_dir / OUTCOMES_FILE
    if not path.is_file():
        return None
    data = read_json(path, fix=_FIX)
    rows = data.get("outcomes")
    if not isinstance(rows, list) or any(not isinstance(r, dict) or set(_FIELDS) - set(r) for r in rows):
        raise CorruptFileError(f"{path}: expected {{'outcomes': [{{{', '.join(_FIELDS)}}}, ...]}}; {_FIX}")
    return rows


def read_outcomes_iteration(run_dir: Path) -> int | None:
    """The completed iterations after which ``run_dir``'s recorded evaluation ran, or None when there is no record.

    Raises:
        CorruptFileError: the file exists but is damaged (names the file and what to do).
    """
    path = run_dir / OUTCOMES_FILE
    if not path.is_file():
        return None
    iteration = read_json(path, fix=_FIX).get("iteration")
    if isinstance(iteration, bool) or not isinstance(iteration, int):
        raise CorruptFileError(f"{path}: 'iteration' is {iteration!r}, not a count of iterations; {_FIX}")
    return iteration
