"""Text view for CPU policies (grid, candidates) and one text episode on the real app (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _desktop_apps import desktop_missing

from rlanything_core.envs.desktop.task_authoring import SALES
from rlanything_core.envs.desktop.text_view import candidate_actions, read_grid, render_grid
from rlanything_core.envs.desktop.variants import TASKS_DIR


def test_grid_render_and_read(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    for row in SALES:
        book.active.append(row)
    book.active["F9"] = None
    book.save(tmp_path / "s.xlsx")
    grid = read_grid(tmp_path / "s.xlsx")
    assert grid == {"Sheet1": SALES}
    text = render_grid(grid)
    assert 'Sheet "Sheet1" (7 rows x 4 columns)' in text
    assert "Region" in text and "Plums" in text and text.splitlines()[1].split("|")[1].strip() == "A"
    assert "more rows" in render_grid(grid, max_rows=3)


def test_candidates_cover_the_tasks_operations() -> None:
    labels = [a.label for a in candidate_actions({"Sheet1": SALES}, "In sales.xlsx, type the header Revenue into E1.")]
    assert labels[-2:] == ["DONE", "FAIL"] and len(labels) == len(set(labels))
    for expected in (
        "type 'Revenue' into E1",
        "put =SUM(C2:C7) in C8",
        "fill E2:E7 with =Cn*Dn",
        "sort rows by column C ascending",
        "make row 1 bold",
        "format D2:D7 as currency",
        "delete row 4",
    ):
        assert expected in labels
    assert "type 'In' into E1" not in labels  # instruction filler words are not candidates
    assert [a.label for a in candidate_actions({}, "x")] == ["DONE", "FAIL"]


@pytest.mark.slow
def test_text_episode_on_the_real_app(tmp_path: Path) -> None:
    from rlanything_core.envs.desktop.text_env import DesktopTextEnvFactory, DisplayPool

    if desktop_missing():
        pytest.skip(desktop_missing())
    pool = DisplayPool()
    try:
        factory = DesktopTextEnvFactory(pool, max_episode_steps=3)
        env = factory(TASKS_DIR / "calc-04-sum.json")
        first = env.reset()
        assert "Units" in first.observation and "put =SUM(C2:C7) in C8" in first.admissible_actions
        step = env.step("put =SUM(C2:C7) in C8")
        assert not step.done and "67" in step.observation  # the grid read back shows LibreOffice's result
        unknown = env.step("dance")
        assert "Unknown action" in unknown.observation and not unknown.done
        final = env.step("DONE")
        assert final.done and final.won and env.score == 1.0
        env.close()
        again = factory(TASKS_DIR / "calc-04-sum.json")  # the same display serves the next episode
        again.reset()
        lost = again.step("FAIL")
        assert lost.done and not lost.won
        again.close()
        assert pool.size == 1
    finally:
        pool.close()
