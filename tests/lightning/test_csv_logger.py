"""ResumableCSVLogger: a rerun appends to metrics.csv; a repeated iteration replaces its rows; nothing else is lost."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from lightning.pytorch.loggers import CSVLogger

from rlanything_core.files import CorruptFileError
from rlanything_core.lightning.csv_logger import ResumableCSVLogger, read_metrics


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_resumed_run_appends_and_replaces_only_repeated_iterations(tmp_path: Path) -> None:
    first = ResumableCSVLogger(str(tmp_path), name="logs", version="", replay_key="iteration")
    first.log_metrics({"iteration": 0, "loss": 1.0}, step=0)
    first.log_metrics({"iteration": 1, "loss": 0.9}, step=1)
    first.log_metrics({"eval/success": 0.5}, step=2)  # an evaluation row: no iteration column
    first.log_metrics({"iteration": 2, "loss": 0.8}, step=2)  # ran, then the process was killed before its checkpoint
    path = tmp_path / "logs" / "metrics.csv"
    assert [r["iteration"] for r in _rows(path)] == ["0", "1", "", "2"]  # flushed every step: nothing lost to a kill

    resumed = ResumableCSVLogger(str(tmp_path), name="logs", version="", replay_key="iteration")
    resumed.log_metrics({"iteration": 2, "loss": 0.7, "judge/loss": 0.1}, step=2)  # iteration 2 repeated
    resumed.log_metrics({"iteration": 3, "loss": 0.6}, step=3)
    resumed.save()
    rows = _rows(path)
    assert [(r["iteration"], r["loss"]) for r in rows] == [("0", "1.0"), ("1", "0.9"), ("", ""), ("2", "0.7"),
                                                           ("3", "0.6")]  # fmt: skip
    assert rows[2]["eval/success"] == "0.5" and rows[3]["judge/loss"] == "0.1"  # the header grew with a new key
    assert not list(path.parent.glob(".tmp-*"))


def test_lightnings_own_logger_erases_the_history(tmp_path: Path) -> None:
    """Why the subclass exists: CSVLogger with a fixed version deletes metrics.csv when a rerun starts."""
    first = CSVLogger(str(tmp_path), name="logs", version="")
    first.log_metrics({"loss": 1.0}, step=0)
    first.save()
    again = CSVLogger(str(tmp_path), name="logs", version="")
    again.log_metrics({"loss": 0.5}, step=1)
    again.save()
    assert [r["step"] for r in _rows(tmp_path / "logs" / "metrics.csv")] == ["1"]


def _logger(tmp_path: Path) -> ResumableCSVLogger:
    return ResumableCSVLogger(str(tmp_path), name="logs", version="", replay_key="iteration", eval_key="eval/iteration")


def _run(logger: ResumableCSVLogger, iterations: range, *, eval_every: int, final: int | None = None) -> None:
    """What ``RLAnythingLoop`` logs: a training row per iteration (Lightning's step = the iteration), an evaluation row
    after every ``eval_every`` completed iterations and at the end (step = completed iterations)."""
    for i in iterations:
        logger.log_metrics({"iteration": i, "loss": 1.0 / (i + 1)}, step=i)
        if eval_every and (i + 1) % eval_every == 0:
            logger.log_metrics({"eval/iteration": i + 1, "eval/success": 0.1 * i}, step=i + 1)
    if final is not None:
        logger.log_metrics({"eval/iteration": final, "eval/success": 0.9}, step=final)
    logger.save()


def _positions(path: Path) -> list[tuple[str, str, str]]:
    return [(r["step"], r["iteration"], r["eval/iteration"]) for r in _rows(path)]


def test_steps_are_unique_and_gapless_with_evaluations_between_iterations(tmp_path: Path) -> None:
    """Old behaviour: an evaluation after iteration i and the training row of iteration i + 1 shared a step."""
    _run(_logger(tmp_path), range(3), eval_every=1)
    got = _positions(tmp_path / "logs" / "metrics.csv")
    assert [s for s, _, _ in got] == [str(i) for i in range(6)]
    assert [(it, ev) for _, it, ev in got] == [("0", ""), ("", "1"), ("1", ""), ("", "2"), ("2", ""), ("", "3")]


def test_a_kill_after_the_final_evaluation_row_does_not_duplicate_it(tmp_path: Path) -> None:
    """Old behaviour: the rerun evaluated again (every iteration done, no evaluation in memory) and appended a second
    final evaluation row: evaluation rows had no replay key, so they were always kept."""
    _run(_logger(tmp_path), range(3), eval_every=0, final=3)
    _run(_logger(tmp_path), range(0), eval_every=0, final=3)  # the rerun: trains nothing, evaluates again
    got = _positions(tmp_path / "logs" / "metrics.csv")
    assert got == [("0", "0", ""), ("1", "1", ""), ("2", "2", ""), ("3", "", "3")]
    assert _rows(tmp_path / "logs" / "metrics.csv")[-1]["eval/success"] == "0.9"


def test_a_resume_from_an_earlier_checkpoint_replaces_the_repeated_rows_in_order(tmp_path: Path) -> None:
    """Killed after iteration 3's rows and evaluation; the checkpoint holds 2 completed iterations: iterations 2 and
    3 (and the evaluation after 2 iterations, which follows the checkpoint of iteration 1) run again."""
    _run(_logger(tmp_path), range(4), eval_every=2)
    _run(_logger(tmp_path), range(2, 5), eval_every=2, final=5)
    got = _positions(tmp_path / "logs" / "metrics.csv")
    assert [s for s, _, _ in got] == [str(i) for i in range(len(got))]
    assert [(it, ev) for _, it, ev in got] == [
        ("0", ""), ("1", ""), ("", "2"), ("2", ""), ("3", ""), ("", "4"), ("4", ""), ("", "5")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"iteration,loss,step\n0,1.0,0\n\xff\xfe,2,1\n", "not UTF-8"),
        (b"iteration,loss,step\n0,1.0,0\n1,\x00,1\n", "NUL bytes at offset 30"),
        (b'iteration,loss,step\n0,1.0,0\n1,"0.5,1\n', "not a valid CSV file"),
        (b"iteration,loss,step\n0,1.0,0\n1,0.5,1,7,8\n", "line 3 has more cells"),
        (b"iteration,loss,step\n0,1.0,0\nabc,0.5,1\n", "line 3, column 'iteration': 'abc' is not a number"),
    ],
)
def test_a_damaged_metrics_file_is_named_in_one_line_on_resume(tmp_path: Path, payload: bytes, problem: str) -> None:
    """Old behaviour: a raw ``csv.Error`` / ``UnicodeDecodeError`` naming no file, or the row silently kept."""
    path = tmp_path / "logs" / "metrics.csv"
    path.parent.mkdir()
    path.write_bytes(payload)
    logger = _logger(tmp_path)
    with pytest.raises(CorruptFileError, match=problem) as info:
        logger.log_metrics({"iteration": 1, "loss": 0.5}, step=1)  # flushed at once: the file is read here
    message = str(info.value)
    assert message.startswith(str(path)) and "move the file aside" in message and "\n" not in message
    assert path.read_bytes() == payload  # nothing written over it


def test_read_metrics_names_the_file_line_and_column(tmp_path: Path) -> None:
    """Old behaviour (ablation_results.read_metrics): ``could not convert string to float: 'oops'``, no file."""
    path = tmp_path / "metrics.csv"
    path.write_text("iteration,loss,step\n0,1.0,0\n1,oops,1\n")
    with pytest.raises(CorruptFileError, match=r"metrics.csv: line 3, column 'loss': 'oops' is not a number"):
        read_metrics(path)
    path.write_text("iteration,loss,step\n0,1.0,0\n1,,1\n")
    assert read_metrics(path) == [{"iteration": 0.0, "loss": 1.0, "step": 0.0}, {"iteration": 1.0, "step": 1.0}]
    assert read_metrics(tmp_path / "absent.csv") == []


def test_an_evaluation_logged_before_its_iterations_row_is_kept_in_order(tmp_path: Path) -> None:
    """Lightning writes an iteration's row after its batch hooks, where a judge-only evaluation is logged.

    Before: the iteration's row (position i) arrived after the evaluation that follows it (position i + 0.5) and
    replaced it as "repeated work": every judge-only probe of the ALFWorld smoke was lost from metrics.csv.
    """
    logger = _logger(tmp_path)
    for i in range(2):
        logger.log_metrics({"eval/iteration": i + 1, "eval/judge": 0.5 + i}, step=i + 1)  # on_train_batch_end
        logger.log_metrics({"iteration": i, "loss": 1.0}, step=i)  # then Lightning's row of the batch
    logger.log_metrics({"eval/iteration": 2, "eval/success": 0.25}, step=2)  # the final evaluation, later
    rows = _rows(tmp_path / "logs" / "metrics.csv")
    assert [(r["iteration"], r["eval/iteration"]) for r in rows] == [("0", ""), ("", "1"), ("1", ""), ("", "2"),
                                                                     ("", "2")]  # fmt: skip
    assert [r["step"] for r in rows] == ["0", "1", "2", "3", "4"]
    assert rows[1]["eval/judge"] == "0.5" and rows[4]["eval/success"] == "0.25"
