"""The ALFWorld stepping figure of the rollout benchmark (``benchmarks/alfworld_parallel.py``)."""

from __future__ import annotations

import pytest

from benchmarks.alfworld_parallel import benchmark_alfworld_parallel


@pytest.mark.alfworld
@pytest.mark.slow
def test_both_pool_sizes_step_the_same_games() -> None:
    figures = benchmark_alfworld_parallel(num_games=2, steps=2)
    assert figures["steps_per_s_1"] > 0 and figures["steps_per_s_2"] > 0
    assert figures["speedup"] == pytest.approx(figures["steps_per_s_2"] / figures["steps_per_s_1"])
