"""Progress of a long phase: the lines every few percent, their counts and ETA, and the run's log file."""

from __future__ import annotations

import io
import re
import sys
import time
from pathlib import Path

import pytest

from rlanything_core.progress import (
    LOGGER,
    Progress,
    eta_seconds,
    format_duration,
    heartbeat,
    log_to_file,
    progress_line,
)


def _counts(lines: list[str], total: int) -> list[int]:
    """The done counts of progress lines ``... <done>/<total> ...``."""
    return [int(re.search(rf": (\d+)/{total} ", x).group(1)) for x in lines]  # type: ignore[union-attr]


def test_the_eta_is_the_pace_so_far_times_what_is_left() -> None:
    assert eta_seconds(0, 10, 5.0) is None and eta_seconds(10, 10, 5.0) == 0.0
    assert eta_seconds(2, 10, 30.0) == pytest.approx(120.0)
    with pytest.raises(ValueError, match="done: expected <= total"):
        eta_seconds(11, 10, 1.0)
    with pytest.raises(ValueError, match="expected >= 0"):
        eta_seconds(1, 10, -1.0)
    assert [format_duration(x) for x in (None, 42.0, 450.0, 7560.0)] == ["?", "42 s", "7.5 min", "2.1 h"]


def test_a_resumed_phase_counts_only_its_own_units_in_the_pace() -> None:
    # 6 of 12 iterations were done before; 2 more took 60 s: 4 left at 30 s each
    assert progress_line("training", 8, 12, 60.0, "iterations", initial=6) == (
        "training: 8/12 iterations (67%), 1.0 min elapsed, ETA 2.0 min"
    )


def test_a_line_every_few_percent_and_at_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress(40, "evaluation", unit="steps", log_every=10, min_interval_s=0) as bar:
        for _ in range(40):
            bar.update()
    lines = capsys.readouterr().out.splitlines()
    assert all(re.match(r"^\[\d\d:\d\d:\d\d\] evaluation: \d+/40 steps \(\d+%\), .* elapsed, ETA ", x) for x in lines)
    assert _counts(lines, 40) == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40]  # the start, every 10%, the end once


def test_a_slow_phase_says_how_far_it_is_at_least_every_interval(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr("rlanything_core.progress.time.monotonic", lambda: clock[0])
    with Progress(1000, "evaluation", unit="steps", log_every=50, log_interval_s=60.0) as bar:
        for _ in range(10):  # 10 steps of 25 s each: 1% of the phase, 250 s
            clock[0] += 25.0
            bar.update()
    lines = capsys.readouterr().out.splitlines()
    # the start, then each step that came 60 s or more after the last line
    assert _counts(lines[:-1], 1000) == [0, 3, 6, 9]
    assert "done at 10/1000 steps" in lines[-1]


def test_a_quick_phase_is_not_spelled_out_unit_by_unit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr("rlanything_core.progress.time.monotonic", lambda: clock[0])
    with Progress(30, "evaluation (4 episodes)", unit="steps", log_every=2, min_interval_s=10.0) as bar:
        for _ in range(30):  # 30 steps of 0.2 s, each past another 2%: the start and the end only
            clock[0] += 0.2
            bar.update()
    assert _counts(capsys.readouterr().out.splitlines(), 30) == [0, 30]
    with Progress(30, "evaluation (140 episodes)", unit="steps", log_every=2, min_interval_s=10.0) as bar:
        for _ in range(30):  # 30 steps of 7 s: every other step
            clock[0] += 7.0
            bar.update()
    assert _counts(capsys.readouterr().out.splitlines(), 30) == [0, *range(2, 31, 2)]


def test_a_long_call_beats_while_it_runs_and_says_when_it_ended(capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    with heartbeat("resetting 140 episodes", interval_s=0.01):
        deadline = time.monotonic() + 30.0
        while len(lines) < 3 and time.monotonic() < deadline:  # waits for two beats, however loaded the machine
            lines += capsys.readouterr().out.splitlines()
            time.sleep(0.005)
    lines += capsys.readouterr().out.splitlines()
    texts = [x.split("] ", 1)[1] for x in lines]
    assert texts[0] == "resetting 140 episodes: started"
    assert texts[1].startswith("resetting 140 episodes: still running, ") and texts[1].endswith(" elapsed")
    assert texts[-1].startswith("resetting 140 episodes: done in ")
    with pytest.raises(KeyError), heartbeat("loading", interval_s=60.0):
        raise KeyError("x")
    assert capsys.readouterr().out.splitlines()[-1].split("] ", 1)[1].startswith("loading: stopped after ")
    with heartbeat("quiet", enabled=False):
        pass
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="^interval_s: "), heartbeat("x", interval_s=0):
        pass


def test_beats_reach_the_console_while_the_call_swaps_standard_output(monkeypatch: pytest.MonkeyPatch) -> None:
    # fast_downward's PDDL translation (most of an ALFWorld reset) swaps sys.stdout for a StringIO while it runs:
    # beats written to sys.stdout as it is then vanished into it, and a 5-minute reset printed one beat of four
    console, captured = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", console)
    with heartbeat("resetting 140 episodes", interval_s=0.01):
        sys.stdout = captured  # what the library does inside the call
        deadline = time.monotonic() + 30.0
        while console.getvalue().count("still running") < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        sys.stdout = console
    assert console.getvalue().count("still running") >= 2
    assert "done in" in console.getvalue().splitlines()[-1]
    assert captured.getvalue() == ""


def test_a_phase_that_ends_early_says_so_and_a_disabled_one_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    bar = Progress(50, "evaluation (8 episodes)", unit="steps", log_every=50)
    bar.update(7)
    bar.close()
    out = capsys.readouterr().out.splitlines()
    assert out[-1].split("] ", 1)[1].startswith("evaluation (8 episodes): done at 7/50 steps, ")
    quiet = Progress(5, "x", enabled=False)
    quiet.update(5)
    quiet.close()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("kwargs", "name"), [({"total": -1}, "total"), ({"total": 3, "initial": 4}, "initial"),
                                              ({"total": 3, "log_every": 0}, "log_every"),
                                              ({"total": 3, "log_interval_s": 0}, "log_interval_s"),
                                              ({"total": 3, "min_interval_s": -1}, "min_interval_s")])  # fmt: skip
def test_bad_arguments_are_refused(kwargs: dict[str, int], name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}: "):
        Progress(what="x", **kwargs)  # type: ignore[arg-type]


def test_the_lines_go_to_the_run_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handler = log_to_file(tmp_path / "logs" / "progress.log")
    try:
        with Progress(4, "training", unit="iterations", log_every=25) as bar:
            bar.update(4)
    finally:
        LOGGER.removeHandler(handler)
        handler.close()
    text = (tmp_path / "logs" / "progress.log").read_text().splitlines()
    assert [x.split("] ", 1)[1].split(",")[0] for x in text] == [
        "training: 0/4 iterations (0%)",
        "training: 4/4 iterations (100%)",
    ]
    capsys.readouterr()
