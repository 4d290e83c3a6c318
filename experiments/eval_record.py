"""A run's last evaluation, episode by episode: ``<run_dir>/eval_outcomes.json`` (what the paired statistics read).

``train.py`` writes it after the final evaluation of a fit (and after an ``eval_only`` evaluation); the ablation reads
it per arm and seed and pairs the episodes by (split, game, run). Evaluators that keep no per-episode outcomes
(coding) write nothing, and the ablation's paired columns then say so.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rlanything_core.environment._io import atomic_write_json

__all__ = ["OUTCOMES_FILE", "read_eval_outcomes", "write_eval_outcomes"]

OUTCOMES_FILE = "eval_outcomes.json"
_FIELDS = ("split", "task_id", "run", "won", "steps")


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
        ValueError: the file exists but is not an outcomes record (names the file and what is missing).
    """
    path = run_dir / OUTCOMES_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    rows = data.get("outcomes") if isinstance(data, dict) else None
    if not isinstance(rows, list) or any(not isinstance(r, dict) or set(_FIELDS) - set(r) for r in rows):
        raise ValueError(f"{path}: expected {{'outcomes': [{{{', '.join(_FIELDS)}}}, ...]}}")
    return rows
