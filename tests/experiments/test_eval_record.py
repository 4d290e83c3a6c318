"""eval.json and eval_outcomes.json: a damaged file is named in one line with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlanything_core.assembly.eval_record import (
    EVAL_FILE,
    OUTCOMES_FILE,
    read_eval_metrics,
    read_eval_outcomes,
    read_outcomes_iteration,
)
from rlanything_core.files import CorruptFileError


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "empty"),
        (b'{"success_rate": 0.5, "ut": ', "not valid JSON"),
        (b"[0.5]", "expected a JSON dict"),
        (b'{"success_rate": "high"}', "'success_rate' is 'high', not a number"),
    ],
)
def test_a_damaged_eval_json_is_named(tmp_path: Path, payload: bytes, problem: str) -> None:
    """Old behaviour (ablation_results.read_before_run): a bare ``JSONDecodeError`` naming no file, or a string
    metric passed on to the table."""
    (tmp_path / EVAL_FILE).write_bytes(payload)
    with pytest.raises(CorruptFileError, match=problem) as info:
        read_eval_metrics(tmp_path)
    message = str(info.value)
    assert message.startswith(str(tmp_path / EVAL_FILE)) and "rerun" in message and "\n" not in message


def test_eval_json_reads_numbers(tmp_path: Path) -> None:
    (tmp_path / EVAL_FILE).write_text('{"a/success_rate": 0.5, "a/episodes": 8}')
    assert read_eval_metrics(tmp_path) == {"a/success_rate": 0.5, "a/episodes": 8.0}


def test_a_damaged_outcomes_file_is_named(tmp_path: Path) -> None:
    """Old behaviour: ``json.loads`` raised a bare ``JSONDecodeError`` on a truncated file."""
    assert read_eval_outcomes(tmp_path) is None
    (tmp_path / OUTCOMES_FILE).write_text('{"iteration": 3, "outcomes": [{"split"')
    with pytest.raises(CorruptFileError, match=f"{OUTCOMES_FILE}: not valid JSON.*delete it and rerun"):
        read_eval_outcomes(tmp_path)
    (tmp_path / OUTCOMES_FILE).write_text('{"iteration": 3, "outcomes": [{"split": "a"}]}')
    with pytest.raises(CorruptFileError, match="expected .*outcomes"):
        read_eval_outcomes(tmp_path)


def test_the_recorded_iteration_is_read_and_a_bad_one_named(tmp_path: Path) -> None:
    assert read_outcomes_iteration(tmp_path) is None
    (tmp_path / OUTCOMES_FILE).write_text('{"iteration": 3, "outcomes": []}')
    assert read_outcomes_iteration(tmp_path) == 3
    (tmp_path / OUTCOMES_FILE).write_text('{"iteration": "3", "outcomes": []}')
    with pytest.raises(CorruptFileError, match=f"{OUTCOMES_FILE}: 'iteration' is '3'.*delete it and rerun"):
        read_outcomes_iteration(tmp_path)
