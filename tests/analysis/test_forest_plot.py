"""The forest plot's differences: the breakdown's statistic on the same episodes, and a clear error for a bad arm."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlanything_core.analysis.breakdown import paired_differences
from rlanything_core.analysis.plots import Comparison, paired_forest, write_forest


def _rows() -> list[dict[str, str]]:
    """Two seeds x 20 games: arm ``b`` wins 5 more games than ``a`` in seed 0 and 2 more in seed 1."""
    rows = []
    for seed, extra in ((0, 5), (1, 2)):
        for g in range(20):
            a = int(g < 6)
            b = int(g < 6 + extra)
            for arm, won in (("a", a), ("b", b)):
                rows.append({"arm": arm, "seed": str(seed), "split": "in_distribution", "game": f"g{g}",
                             "run": "0", "success": str(won)})  # fmt: skip
    return rows


def test_paired_forest_matches_the_breakdown_and_draws(tmp_path: Path) -> None:
    rows = _rows()
    (line,) = paired_forest(rows, [Comparison("b - a", "b", "a")])
    assert line.seeds == (0, 1)
    assert line.difference.estimate == pytest.approx(7 / 40)
    breakdown = paired_differences(rows, "a")[1][1]  # "+17.5 [low, high]"
    d = line.difference
    assert breakdown == f"{100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
    assert 0 < d.low < d.estimate < d.high
    out = tmp_path / "forest.png"
    write_forest(out, {"group": [line]}, title="t")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_paired_forest_names_an_unknown_arm() -> None:
    with pytest.raises(ValueError, match="comparisons: 'c - a' names 'c'"):
        paired_forest(_rows(), [Comparison("c - a", "c", "a")])
