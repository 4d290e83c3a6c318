"""Attacks on the desktop checker through the result files, each refused.

On f113c84 ``compare_table`` read the result with openpyxl and pandas in the trainer's own process with no limit: a
GUI fill of five million cells took 252 s and 2.27 GB to score. Now the getters and metrics run in a child with time,
memory and file-size limits; a link or a FIFO in place of the result is removed before the trusted side reads it.
"""

from __future__ import annotations

import os
import resource
import time
import zipfile
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.checker import CheckLimit, CheckLimits, check_files
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.task import load_task
from rlanything_core.envs.desktop.variants import TASKS_DIR

SUM_TASK = TASKS_DIR / "calc-04-sum.json"
GOLD = TASKS_DIR / "files" / "calc-04-sum_gold.xlsx"
RESULT = "/home/user/sales.xlsx"
SCREEN = (1280, 800)

_WORKBOOK = (
    '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    ' xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
    '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
_PARTS = {
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.'
    'xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override '
    'PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.'
    'worksheet+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
    'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
    "xl/workbook.xml": _WORKBOOK,
    "xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
    'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
    'officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
}


def _filled_workbook(path: Path, rows: int, cols: str = "ABCDE") -> None:
    """A workbook whose first sheet holds ``rows x len(cols)`` cells of 1, as a GUI fill of the range leaves it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as book:
        for name, text in _PARTS.items():
            book.writestr(name, text)
        with book.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            sheet.write(b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
                        b'spreadsheetml/2006/main"><sheetData>')
            chunk = []
            for r in range(1, rows + 1):
                cells = "".join(f'<c r="{c}{r}"><v>1</v></c>' for c in cols)
                chunk.append(f'<row r="{r}">{cells}</row>')
                if len(chunk) == 20000:
                    sheet.write("".join(chunk).encode())
                    chunk.clear()
            sheet.write("".join(chunk).encode() + b"</sheetData></worksheet>")


@pytest.fixture()
def episode(tmp_path: Path) -> EpisodeFS:
    return EpisodeFS(tmp_path / "episode")


def test_the_gold_file_itself_scores_one_in_the_checker(episode: EpisodeFS) -> None:
    """The control: the check process scores a right result 1.0 (and reads the gold file after the episode)."""
    target = episode.local(RESULT)
    target.write_bytes(GOLD.read_bytes())
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN)
    assert (result.outcome.score, result.limit, result.outcome.error) == (1.0, None, "")


@pytest.mark.slow
def test_a_five_million_cell_fill_is_scored_within_the_limits(episode: EpisodeFS) -> None:
    """1,000,000 rows x 5 columns: the check breaks its limit and scores 0, within the time limit, in a child."""
    _filled_workbook(episode.local(RESULT), rows=1_000_000)
    limits = CheckLimits(time_s=15.0, memory_mb=1024)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN, limits=limits)
    wall = time.perf_counter() - t0
    assert result.outcome.score == 0.0 and result.limit in (CheckLimit.TIME, CheckLimit.MEMORY), result
    assert result.limit.value in result.outcome.error or "over" in result.outcome.error
    assert wall < limits.time_s + 10, wall
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 200, f"the trainer's process grew by {grown_mb:.0f} MiB"


def test_a_result_over_the_file_size_limit_scores_zero(episode: EpisodeFS) -> None:
    target = episode.local(RESULT)
    with open(target, "wb") as f:
        f.write(GOLD.read_bytes())
        f.write(b"\0" * (3 << 20))  # a valid zip with 3 MiB of trailing junk still loads: the size is the attack
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN, limits=CheckLimits(file_mb=1))
    assert result.outcome.score == 0.0 and result.limit is CheckLimit.FILE_SIZE, result


def test_a_check_that_runs_too_long_is_stopped_and_named(episode: EpisodeFS) -> None:
    episode.local(RESULT).write_bytes(GOLD.read_bytes())
    t0 = time.perf_counter()
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN, limits=CheckLimits(time_s=0.01))
    assert result.outcome.score == 0.0 and result.limit is CheckLimit.TIME, result
    assert "over 0.01 s" in result.outcome.error and time.perf_counter() - t0 < 10


def test_a_link_to_the_gold_file_in_place_of_the_result_is_dropped(episode: EpisodeFS) -> None:
    """A result that is a symbolic link to the gold file would score 1.0 when the trusted side follows it."""
    target = episode.local(RESULT)
    target.symlink_to(GOLD)
    (episode.home / "Desktop" / "dir-link").symlink_to(TASKS_DIR)
    dropped = episode.drop_links()
    assert sorted(dropped) == sorted([str(target), str(episode.home / "Desktop" / "dir-link")])
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN)
    assert result.outcome.score == 0.0 and "does not exist" in result.outcome.error, result


def test_a_fifo_in_place_of_the_result_does_not_block_the_check(episode: EpisodeFS) -> None:
    target = episode.local(RESULT)
    os.mkfifo(target)
    assert episode.drop_links() == [str(target)]
    result = check_files(load_task(SUM_TASK), episode, screen=SCREEN, limits=CheckLimits(time_s=20))
    assert result.outcome.score == 0.0 and result.limit is None, result


def test_check_limits_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="time_s"):
        CheckLimits(time_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        CheckLimits(memory_mb=10)


@pytest.mark.slow
def test_the_environment_counts_a_broken_limit(desktop_env) -> None:
    """A good solution checked under a limit it cannot meet scores 0 and is counted, reason named."""
    from rlanything_core.envs.desktop.cli import load_actions, run_task

    env = desktop_env
    saved = env.checker.limits
    env.checker.limits = CheckLimits(time_s=0.01)
    before = env.broken_limits["time"]
    try:
        report = run_task(SUM_TASK, load_actions(TASKS_DIR / "solutions" / "calc-04-sum.good.py"), env=env)
    finally:
        env.checker.limits = saved
    assert report["score"] == 0.0 and "over 0.01 s" in report["error"], report
    assert env.broken_limits["time"] == before + 1
