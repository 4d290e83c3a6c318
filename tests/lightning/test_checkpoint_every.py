"""``RLAnythingLoop(checkpoint_every=N)``: a save every N iterations and after the last, each save's seconds reported;
a resumed run continues from the last save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from _update_rows import FixedRows, ragged_rows, updates

from rlanything_core.lightning.checkpoint import read_checkpoint
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.models.tiny import tiny_causal_lm


def _loop(tmp_path: Path, *, every: int = 1, iterations: int = 5, **kwargs: Any) -> RLAnythingLoop:
    policy, _ = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0), micro_batch_tokens=64,
        policy_optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )  # fmt: skip
    data = IterationData(iteration=0, policy=ragged_rows(4, 10, seed=0), judge=None)
    return RLAnythingLoop(
        FixedRows(data), policy.runtime, policy, iterations=iterations, checkpoint_dir=tmp_path,
        checkpoint_every=every, **kwargs,
    )  # fmt: skip


def test_saves_every_n_and_the_last_and_reports_each_saves_time(tmp_path: Path) -> None:
    loop = _loop(tmp_path, every=2)
    loop.run()
    assert loop.saved == [2, 4, 5]  # every 2nd, and the last although 5 is odd
    assert sorted(loop.checkpoint_seconds) == [1, 2, 3, 4, 5]
    assert all(loop.checkpoint_seconds[k] > 0 for k in loop.saved)
    saved = read_checkpoint(loop.last)
    assert saved["loop"]["completed"] == 5  # the last iteration's state, not the 4th's
    assert len(saved["update_history"]) == 5
    assert [e.get("time/checkpoint_s") is not None for e in loop.update_history] == [True] * 5
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # written to a temporary file, renamed


def test_a_rerun_resumes_from_the_last_save_and_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    whole = _loop(tmp_path / "whole", iterations=3)
    whole.run()
    first = _loop(tmp_path / "parts", iterations=2)  # as if killed after iteration 1's checkpoint
    first.run()
    resumed = _loop(tmp_path / "parts", iterations=3)
    resumed.run()
    assert resumed.completed == 3 and resumed.saved == [3]  # only the remaining iteration ran
    assert [e["iteration"] for e in resumed.update_history] == [0.0, 1.0, 2.0]  # the history came back too
    for a, b in zip(whole.models.parameters(), resumed.models.parameters()):
        assert torch.equal(a, b)
    assert not any(torch.equal(a, b) for a, b in zip(first.models.parameters(), resumed.models.parameters()))


@pytest.mark.parametrize(("every", "total", "due"), [(1, 3, [1, 2, 3]), (3, 7, [3, 6, 7]), (4, 9, [4, 8, 9])])
def test_due(tmp_path: Path, every: int, total: int, due: list[int]) -> None:
    loop = _loop(tmp_path, every=every, iterations=total)
    assert [k for k in range(1, total + 1) if loop.checkpoint_due(k)] == due


@pytest.mark.parametrize("every", [0, -1, True, 1.5])
def test_a_bad_interval_is_refused(tmp_path: Path, every: Any) -> None:
    with pytest.raises(ValueError, match="checkpoint_every: expected an integer >= 1"):
        _loop(tmp_path, every=every)
