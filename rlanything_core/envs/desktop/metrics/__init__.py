"""The OSWorld metrics this interpreter runs, by the names task JSONs use in ``evaluator.func``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlanything_core.envs.desktop.metrics.general import check_include_exclude, exact_match, literal_match
from rlanything_core.envs.desktop.metrics.table import check_table_options, compare_csv, compare_table

__all__ = ["METRICS", "check_include_exclude", "check_metric_options", "compare_csv", "compare_table", "exact_match"]

METRICS: dict[str, Callable[..., float]] = {
    "compare_table": compare_table,
    "compare_csv": compare_csv,
    "check_include_exclude": check_include_exclude,
    "exact_match": exact_match,
    "literal_match": literal_match,
}


def check_metric_options(name: str, options: dict[str, Any]) -> None:
    """Raise ``ValueError`` when a metric's options ask for something outside the supported subset."""
    if not isinstance(options, dict):
        raise ValueError(f"options of {name!r} must be a dict, got {options!r}")
    if name == "compare_table":
        check_table_options(options)
