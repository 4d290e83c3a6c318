"""One of OSWorld's published Calc tasks end to end in the real app (slow; runs in CI where the desktop apps are).

The task JSON is loaded unchanged with stand-in files in a cache of OSWorld's layout; the set-up downloads the input
from the cache to ``/home/user`` of the episode and opens it in Calc; the agent's GUI actions fix the cell; the
post-config saves with Ctrl+S and exports the sheet with ``libreoffice --convert-to csv`` (a headless export); the
``sheet_print`` rule compares the printed sheet with the gold one. Doing nothing scores 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _osworld_standins import EXAMPLES, calc_case, task_path

from rlanything_core.envs.desktop.calc_gui import goto, type_cells
from rlanything_core.envs.desktop.task import load_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}"),
]
SHEET_PRINT_TASK = "4f07fbe9-70de-4927-a4d5-bb28bc12c52c"  # Padding_Decimals_In_Formular: a sheet_print rule


def test_an_osworld_calc_task_runs_from_its_cache(desktop_env, tmp_path: Path) -> None:
    path = task_path("libreoffice_calc", SHEET_PRINT_TASK)
    cache = tmp_path / "cache"
    calc_case(json.loads(path.read_text()), cache).write_cache()
    task = load_task(path, cache_dir=cache)
    env = desktop_env

    env.reset(task)
    assert not env.failure, env.failure
    workbook = env.fs.local("/home/user/Padding_Decimals_In_Formular.xlsx")
    assert workbook.is_file() and workbook.parent == env.fs.home
    env.step("DONE")
    untouched = env.evaluate()
    assert untouched.score == 0.0, untouched
    assert env.fs.local("/home/user/Padding_Decimals_In_Formular-Sheet1.csv").is_file()  # the live export ran

    env.reset(task)
    for action in (goto("C3"), type_cells("7"), "DONE"):  # the stand-in input has 99 where the gold has 7
        env.step(action)
    solved = env.evaluate()
    assert (solved.score, solved.error) == (1.0, ""), solved


CENTRED_HEADING_TASK = "3ef2b351-8a84-4ff2-8724-d86eae9b842e"  # Writer: is_first_line_centered
SLIDES_TASK = "550ce7e7-747b-495f-b122-acdc4d0b8e54"  # Impress: compare_pptx_files


def _cached(domain: str, task_id: str, make_case, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = task_path(domain, task_id)
    cache = tmp_path / "cache"
    make_case(json.loads(path.read_text()), cache).write_cache()
    return load_task(path, cache_dir=cache)


def test_an_osworld_writer_task_runs_from_its_cache(desktop_env, tmp_path: Path) -> None:
    from _osworld_writer_standins import writer_case

    pytest.importorskip("docx")
    task = _cached("libreoffice_writer", CENTRED_HEADING_TASK, writer_case, tmp_path)
    env = desktop_env
    env.reset(task)
    assert not env.failure, env.failure
    env.step("DONE")
    assert env.evaluate().score == 0.0  # the stand-in input's heading is left-aligned
    env.reset(task)
    for action in ("pyautogui.hotkey('ctrl', 'home'); pyautogui.hotkey('ctrl', 'e')", "DONE"):
        env.step(action)
    solved = env.evaluate()
    assert (solved.score, solved.error) == (1.0, ""), solved


def test_an_osworld_impress_task_opens_and_scores_untouched_zero(desktop_env, tmp_path: Path) -> None:
    from _osworld_impress_standins import impress_case

    pytest.importorskip("pptx")
    task = _cached("libreoffice_impress", SLIDES_TASK, impress_case, tmp_path)
    env = desktop_env
    env.reset(task)
    assert not env.failure, env.failure
    env.step("DONE")
    outcome = env.evaluate()  # the input is the stand-in's first wrong deck: saved through Impress, still wrong
    assert outcome.score == 0.0 and "postconfig" not in outcome.error, outcome
