"""The credit a run's advantages give the expert's steps (rlanything_core.analysis.step_credit)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rlanything_core.analysis.step_credit import main, render, step_credit


def _records(rows: list[tuple[str, str, float, int | None, float]]) -> pd.DataFrame:
    """(task type, game, advantage, expert_agrees, p_plus) per step."""
    frame = pd.DataFrame(rows, columns=["task_type", "game", "advantage", "expert_agrees", "p_plus"])
    frame["expert_agrees"] = frame["expert_agrees"].astype("Int8")
    return frame


def test_credit_is_the_hand_counted_difference_of_mean_advantages() -> None:
    records = _records([
        ("clean", "g1", 1.0, 1, 0.9), ("clean", "g1", -1.0, 0, 0.2), ("clean", "g2", 0.5, 1, 0.8),
        ("clean", "g2", 0.0, 0, 0.1), ("clean", "g2", 3.0, None, 0.5),  # unlabelled: left out
        ("look", "g3", 2.0, 1, 0.3), ("look", "g3", 0.0, 0, 0.7),
    ])  # fmt: skip
    rows = {r.group: r for r in step_credit(records, samples=200)}
    assert rows["clean"].credit == pytest.approx((1.0 + 0.5) / 2 - (-1.0 + 0.0) / 2)
    assert rows["clean"].steps == 4 and rows["clean"].games == 2 and rows["clean"].agree_rate == 0.5
    assert rows["clean"].judge_auc == 1.0  # its P(+1) puts every expert step above every other
    assert rows["look"].judge_auc == 0.0 and rows["look"].low == rows["look"].high == 2.0  # one game: no spread
    assert rows["all"].credit == pytest.approx((1.0 + 0.5 + 2.0) / 3 - (-1.0 + 0.0 + 0.0) / 3)
    assert rows["clean"].low <= rows["clean"].credit <= rows["clean"].high
    grouped = step_credit(records, {"kitchen": ["clean"]}, samples=50)
    assert [r.group for r in grouped] == ["kitchen", "all"]
    assert "| clean | 4 | 2 | 50.0% | +1.250" in render("run", step_credit(records, samples=50))


def test_without_judge_probabilities_the_auc_is_nan_and_without_labels_it_refuses() -> None:
    records = _records([("clean", "g1", 1.0, 1, math.nan), ("clean", "g1", -1.0, 0, math.nan)])
    assert math.isnan(step_credit(records, samples=10)[0].judge_auc)
    with pytest.raises(ValueError, match="^records: no step has an expert label"):
        step_credit(_records([("clean", "g1", 1.0, None, 0.5)]))


def test_a_results_folder_glob_skips_the_evaluation_only_runs_and_refuses_a_training_run_without_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``runs/*_seed0`` holds the "before" evaluation beside the training runs: named and skipped, not an error."""
    before = tmp_path / "before_seed0"
    before.mkdir()
    (before / "eval.json").write_text("{}")
    trained = tmp_path / "policy_seed0"
    (trained / "logs").mkdir(parents=True)
    (trained / "logs" / "metrics.csv").write_text("step\n")
    main([str(before)])
    assert "before_seed0: an evaluation without training (no step records): skipped" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no step records"):  # a training run that lost its records is an error
        main([str(before), str(trained)])
