"""``benchmarks/stored_labels.py`` on one short real episode: it prints its figures and the labels agree."""

from __future__ import annotations

import pytest

from benchmarks.stored_labels import main

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


def test_the_benchmark_reads_back_the_labels_it_planned(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--games", "1", "--steps", "3"])
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("1 episodes, ") and line.endswith("same labels: True")
