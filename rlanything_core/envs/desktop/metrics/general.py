"""OSWorld's general metrics on strings and values (its semantics, written here)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["check_include_exclude", "check_moved_jpgs", "check_text_enlarged", "exact_match", "literal_match"]


def check_include_exclude(result: str | None, rules: dict[str, list[str]]) -> float:
    """1.0 when every ``rules["include"]`` string is in ``result`` and no ``rules["exclude"]`` string is.

    ``None`` (nothing was read) scores 0.0.
    """
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(s in result for s in include) and not any(s in result for s in exclude))


def exact_match(result: Any, rules: dict[str, Any]) -> float:
    """1.0 when ``result == rules["expected"]``."""
    return float(result == rules["expected"])


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when ``result`` equals ``expected`` (as lists when ``type == "list"``; ``ignore_case`` for strings)."""
    if options.get("type", "str") == "list":
        result, expected = list(result or []), list(expected or [])
    if options.get("ignore_case", False):
        result = [str(r).lower() for r in result] if isinstance(result, list) else str(result).lower()
        expected = [str(e).lower() for e in expected] if isinstance(expected, list) else str(expected).lower()
    return float(result == expected)


def check_text_enlarged(scaling_factor: Any) -> float:
    """1.0 when the ``text-scaling-factor`` a command printed is a finite number above 1.0.

    (OSWorld's ``basic_os.py``; the printed value is the agent's doing, so a non-number scores 0.0, not an error.)
    """
    try:
        value = float(str(scaling_factor).strip())
    except ValueError:
        return 0.0
    return float(math.isfinite(value) and value > 1.0)


def check_moved_jpgs(directory: dict[str, Any] | None, rules: dict[str, Any]) -> float:
    """1.0 when the folder tree's top-level entries are exactly the names in ``rules["expected"]``.

    (OSWorld's ``desktop_env/evaluators/metrics/basic_os.py``: names compared as a set, counts as a list.)
    """
    if not isinstance(directory, dict) or "children" not in directory:
        return 0.0
    names = [node["name"] for node in directory["children"]]
    expected = list(rules["expected"])
    return float(len(names) == len(expected) and set(names) == set(expected))
