"""The OSWorld metrics this interpreter runs, by the names task JSONs use in ``evaluator.func``.

Each metric has OSWorld's signature, ``metric(result, expected, **options)`` or ``metric(result, rules)`` where a
``rule`` getter gives the expected side; :func:`check_metric_options` and :func:`check_metric_rules` check a task's
options and rules at load, so that a task outside the supported subset is refused before an episode starts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rlanything_core.envs.desktop.metrics import docs, images, profile, slides
from rlanything_core.envs.desktop.metrics.general import (
    check_include_exclude,
    check_moved_jpgs,
    check_text_enlarged,
    exact_match,
    literal_match,
)
from rlanything_core.envs.desktop.metrics.pdf import check_pdf_pages, check_pdf_rules, compare_pdfs
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
    "check_moved_jpgs": check_moved_jpgs,
    "check_text_enlarged": check_text_enlarged,
    "check_pdf_pages": check_pdf_pages,
    "compare_pdfs": compare_pdfs,
    **{name: getattr(docs, name) for name in docs.__all__},
    **{name: getattr(slides, name) for name in slides.__all__ if name != "PPTX_OPTIONS"},
    **{name: getattr(profile, name) for name in profile.__all__ if name != "registry_value"},
    "check_highlighted_words": docs.check_highlighted_words,
    "compare_images": images.compare_images,
}


def _needs(keys: dict[str, type | tuple[type, ...]]) -> Callable[[Any], None]:
    """A check that ``rules`` is a dict holding each key with a value of the given type."""

    def check(rules: Any) -> None:
        if not isinstance(rules, dict):
            raise ValueError(f"rules must be a dict with {sorted(keys)}, got {rules!r}")
        for key, kind in keys.items():
            value = rules.get(key)
            if key not in rules or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"rules need {key!r} of type {kind}, got {value!r}")

    return check


def _rgb_rules(rules: Any) -> None:
    _needs({"rgb": list})(rules)
    if len(rules["rgb"]) != 3 or not all(isinstance(v, int) and 0 <= v <= 255 for v in rules["rgb"]):
        raise ValueError(f"rules 'rgb' must be three ints in [0, 255], got {rules['rgb']!r}")


def _include_exclude_rules(rules: Any) -> None:
    if not isinstance(rules, dict) or not set(rules) <= {"include", "exclude"}:
        raise ValueError(f"check_include_exclude rules are {{'include': [...], 'exclude': [...]}}, got {rules!r}")
    for key, strings in rules.items():
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise ValueError(f"check_include_exclude {key!r} must be a list of strings, got {strings!r}")


_RULE_CHECKS: dict[str, Callable[[Any], None]] = {
    "check_pdf_pages": check_pdf_rules,
    "compare_font_names": _needs({"font_name": str}),
    "find_default_font": _needs({"font_name": str}),
    "check_auto_saving_time": _needs({"minutes": int}),
    "check_transition": _needs({"slide_idx": int, "transition_type": str}),
    "evaluate_presentation_fill_to_rgb_distance": _rgb_rules,
    "exact_match": _needs({"expected": object}),
    "check_moved_jpgs": _needs({"expected": list}),
    "check_include_exclude": _include_exclude_rules,
}
_DOCX_OPTIONS = ("ignore_blanks", "ignore_case", "ignore_order")


def check_metric_options(name: str, options: dict[str, Any]) -> None:
    """Raise ``ValueError`` when a metric's options ask for something outside the supported subset."""
    if not isinstance(options, dict):
        raise ValueError(f"options of {name!r} must be a dict, got {options!r}")
    if name == "compare_table":
        check_table_options(options)
    elif name == "compare_docx_files":
        unknown = set(options) - set(_DOCX_OPTIONS)
        if unknown:
            raise ValueError(f"compare_docx_files: unsupported options {sorted(unknown)} (supported: {_DOCX_OPTIONS})")
    elif name == "compare_pptx_files":
        unknown = set(options) - set(slides.PPTX_OPTIONS) - set(slides.IGNORED_OPTIONS)
        if unknown:
            raise ValueError(f"compare_pptx_files: unsupported options {sorted(unknown)}")
    elif name == "evaluate_colored_words_in_tables":
        unknown = set(options) - {"threshold"}
        if unknown:
            raise ValueError(f"evaluate_colored_words_in_tables: unsupported options {sorted(unknown)}")
    elif name == "check_tabstops":
        unknown = set(options) - {"word_number_split_by_tabstop", "index"}
        if unknown:
            raise ValueError(f"check_tabstops: unsupported options {sorted(unknown)}")
    elif options:
        params = inspect.signature(METRICS[name]).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        unknown = set(options) - set(params)
        if unknown and not takes_any:
            raise ValueError(f"{name}: unsupported options {sorted(unknown)}")


def check_metric_rules(name: str, rules: Any) -> None:
    """Raise ``ValueError`` when the ``rules`` a ``rule`` getter hands to metric ``name`` are malformed."""
    check = _RULE_CHECKS.get(name)
    if check is not None:
        check(rules)
