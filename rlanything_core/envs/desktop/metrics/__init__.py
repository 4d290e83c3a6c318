"""The OSWorld metrics this interpreter runs, by the names task JSONs use in ``evaluator.func``.

Each metric has OSWorld's signature, ``metric(result, expected, **options)`` or ``metric(result, rules)`` where a
``rule`` getter gives the expected side; :func:`check_metric_options` and :func:`check_metric_rules` check a task's
options and rules at load, so that a task outside the supported subset is refused before an episode starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlanything_core.envs.desktop.metrics.general import check_include_exclude, exact_match, literal_match
from rlanything_core.envs.desktop.metrics.pdf import check_pdf_pages, check_pdf_rules
from rlanything_core.envs.desktop.metrics.table import check_table_options, compare_csv, compare_table

__all__ = [
    "METRICS",
    "check_include_exclude",
    "check_metric_options",
    "check_metric_rules",
    "check_pdf_pages",
    "compare_csv",
    "compare_table",
    "exact_match",
]

METRICS: dict[str, Callable[..., float]] = {
    "compare_table": compare_table,
    "compare_csv": compare_csv,
    "check_include_exclude": check_include_exclude,
    "exact_match": exact_match,
    "literal_match": literal_match,
    "check_pdf_pages": check_pdf_pages,
}

_RULE_CHECKS: dict[str, Callable[[Any], None]] = {"check_pdf_pages": check_pdf_rules}


def check_metric_options(name: str, options: dict[str, Any]) -> None:
    """Raise ``ValueError`` when a metric's options ask for something outside the supported subset."""
    if not isinstance(options, dict):
        raise ValueError(f"options of {name!r} must be a dict, got {options!r}")
    if name == "compare_table":
        check_table_options(options)


def check_metric_rules(name: str, rules: Any) -> None:
    """Raise ``ValueError`` when the ``rules`` a ``rule`` getter hands to metric ``name`` are malformed."""
    check = _RULE_CHECKS.get(name)
    if check is not None:
        check(rules)
