"""``RLAnythingLoop.run`` reports every iteration (a 36-iteration run printed a line every second iteration: minutes of
silence between lines on two cores)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from _update_rows import FixedRows, ragged_rows, updates

from rlanything_core import progress
from rlanything_core.loop import rlanything_loop
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.models.tiny import tiny_causal_lm


class _EveryLine(progress.Progress):
    """The loop's progress with no minimum time between lines (the test's iterations take milliseconds)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "min_interval_s": 0.0})


def test_a_line_per_iteration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(rlanything_loop, "Progress", _EveryLine)
    policy, _ = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0), micro_batch_tokens=64,
        policy_optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )  # fmt: skip
    data = IterationData(iteration=0, policy=ragged_rows(2, 6, seed=0), judge=None)
    loop = RLAnythingLoop(FixedRows(data), policy.runtime, policy, iterations=36, checkpoint_dir=tmp_path,
                          checkpoint_every=36)  # fmt: skip
    loop.run()
    lines = [line for line in capsys.readouterr().out.splitlines() if "] training: " in line]
    assert [line.split("training: ")[1].split(" ")[0] for line in lines] == [f"{k}/36" for k in range(37)]
