"""rlanything_core/ablation/warm_start.py end to end on three training games: demonstrations, a fit, a DAgger round,
the held-out imitation accuracy and a short evaluation, on the real engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from rlanything_core.ablation import warm_start

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


def test_warm_start_with_a_dagger_round_and_held_out_accuracy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path / "cache"))
    saved = tmp_path / "policy.pt"
    warm_start.main(["--games", "3", "--epochs", "1", "--batch-size", "2", "--dagger-rounds", "1",
                     "--heldout-games", "2", "--eval-games", "1", "--eval-steps", "3", "--group-size", "1",
                     "--temperatures", "1.0", "--workers", "1", "--save", str(saved)])  # fmt: skip
    out = capsys.readouterr().out
    first = re.search(r"demonstrations: (\d+) steps", out)
    assert first is not None and int(first.group(1)) > 0
    fits = re.findall(r"training: .* (\d+) examples x (\d+) epochs", out)
    assert len(fits) == 2 and int(fits[1][0]) > int(fits[0][0])  # the DAgger round added the states it labelled
    assert re.search(r"dagger round 1: the policy won [\d.]+ of 3 valid_train games; \d+ states labelled", out)
    held = re.search(r"held-out expert steps \((\d+) from valid_train games 3-4\), top-1: all ([\d.]+)", out)
    assert held is not None and int(held.group(1)) > 0 and 0.0 <= float(held.group(2)) <= 1.0
    assert re.search(r"success valid_seen \(1 games x 1, 3 steps\): T=1.0 [\d.]+", out)
    assert saved.is_file() and all(torch.isfinite(v).all() for v in torch.load(saved).values())
