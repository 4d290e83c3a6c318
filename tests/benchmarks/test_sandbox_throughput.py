"""The sandbox throughput figure of the rollout benchmark (``benchmarks/sandbox_throughput.py``)."""

from __future__ import annotations

import pytest

from benchmarks.sandbox_throughput import sandbox_execs_per_second


@pytest.mark.slow
def test_benchmark_figure() -> None:
    rate = sandbox_execs_per_second(6)
    assert rate > 0.5


def test_bad_program_count_is_refused() -> None:
    with pytest.raises(ValueError, match="n_programs"):
        sandbox_execs_per_second(0)
