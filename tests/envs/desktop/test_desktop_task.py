"""OSWorld task JSON: the shipped set loads; anything outside the local subset is refused by name at load time."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.cli import load_actions
from rlanything_core.envs.desktop.task import UnsupportedTaskError, parse_task
from rlanything_core.envs.desktop.task_authoring import write_tasks
from rlanything_core.envs.desktop.variants import (
    TASKS_DIR,
    HintMode,
    hint_variant,
    load_hints,
    shipped_tasks,
    strip_hint,
)

TASKS = shipped_tasks()


def test_shipped_set_size_and_grading() -> None:
    assert len(TASKS) >= 20
    assert len({t.task_id for t in TASKS}) == len(TASKS)
    levels = {t.raw["difficulty"] for t in TASKS}
    assert levels == {1, 2, 3, 4, 5}
    assert any(t.infeasible for t in TASKS)
    assert any(isinstance(t.evaluator.get("func"), list) for t in TASKS)  # conj="and" lists are exercised


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
def test_each_task_has_good_and_wrong_solutions(task) -> None:
    good = load_actions(TASKS_DIR / "solutions" / f"{task.task_id}.good.py")
    wrong = load_actions(TASKS_DIR / "solutions" / f"{task.task_id}.wrong.py")
    assert good[-1] == ("FAIL" if task.infeasible else "DONE")
    assert wrong[-1] == "DONE" and good != wrong


def test_authoring_reproduces_the_shipped_files(tmp_path: Path) -> None:
    import openpyxl

    write_tasks(tmp_path)
    for shipped in sorted(TASKS_DIR.glob("*.json")):
        assert json.loads((tmp_path / shipped.name).read_text()) == json.loads(shipped.read_text())
    for sol in sorted((TASKS_DIR / "solutions").glob("*.py")):
        assert (tmp_path / "solutions" / sol.name).read_text() == sol.read_text()
    for book in sorted((TASKS_DIR / "files").glob("*.xlsx")):
        ours, theirs = openpyxl.load_workbook(tmp_path / "files" / book.name), openpyxl.load_workbook(book)
        assert ours.sheetnames == theirs.sheetnames
        for name in ours.sheetnames:
            assert list(ours[name].values) == list(theirs[name].values)


def _base() -> dict:
    return copy.deepcopy(TASKS[0].raw)


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (lambda t: t["config"].append({"type": "chrome_open_tabs", "parameters": {}}), "chrome_open_tabs"),
        (lambda t: t["config"].append({"type": "launch", "parameters": {"command": ["gimp"]}}), "gimp"),
        (lambda t: t["config"].append({"type": "open", "parameters": {"path": "/home/user/a.png"}}), "a.png"),
        (lambda t: t["config"].append({"type": "sleep", "parameters": {"seconds": -1}}), "sleep"),
        (
            lambda t: t["config"].insert(
                0, {"type": "download", "parameters": {"files": [{"url": "https://x.org/nope.xlsx", "path": "a"}]}}
            ),
            "https://x.org/nope.xlsx",
        ),
        (lambda t: t["evaluator"].update(func="compare_videos"), "compare_videos"),
        (lambda t: t["evaluator"]["result"].update(type="accessibility_tree"), "accessibility_tree"),
        (lambda t: t["evaluator"]["options"]["rules"].append({"type": "sparkline"}), "sparkline"),
        (lambda t: t["evaluator"].update(conj="xor", func=["compare_table"]), "conj"),
        (lambda t: t["evaluator"]["postconfig"].append({"type": "googledrive", "parameters": {}}), "googledrive"),
        (lambda t: t.pop("instruction"), "instruction"),
    ],
)
def test_unsupported_pieces_are_refused_by_name(mutate, named: str) -> None:
    raw = _base()
    mutate(raw)
    with pytest.raises(UnsupportedTaskError, match=named.replace(".", r"\.")):
        parse_task(raw, TASKS_DIR)


def test_check_cell_rule_methods_are_checked() -> None:
    raw = _base()
    raw["evaluator"]["options"]["rules"].append(
        {"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {"value": {"method": "fuzzy", "ref": 1}}}
    )
    with pytest.raises(UnsupportedTaskError, match="fuzzy"):
        parse_task(raw, TASKS_DIR)


def test_hint_variants_change_only_the_instruction() -> None:
    hints = load_hints()
    assert set(hints) == {t.task_id for t in TASKS}
    for task in TASKS:
        easy = hint_variant(task, hints[task.task_id], HintMode.ADD)
        assert easy.instruction.startswith(task.instruction) and hints[task.task_id] in easy.instruction
        assert easy.evaluator == task.evaluator and easy.config == task.config
        assert easy.task_id == f"{task.task_id}__hint"
        hard = hint_variant(easy, "", HintMode.REMOVE)
        assert hard.instruction == task.instruction == strip_hint(easy.instruction)
        assert hard.evaluator == task.evaluator
    with pytest.raises(ValueError, match="non-empty"):
        hint_variant(TASKS[0], "  ", HintMode.ADD)


def test_run_task_refuses_before_starting_anything(tmp_path: Path, capsys) -> None:
    from rlanything_core.envs.desktop.cli import main, run_task

    raw = _base()
    raw["config"].insert(0, {"type": "googledrive", "parameters": {}})  # refused before anything else
    path = tmp_path / "task.json"
    path.write_text(json.dumps(raw))
    report = run_task(path, ["DONE"])
    assert report["score"] == 0.0 and "googledrive" in report["error"] and report["steps"] == 0
    bad_actions = tmp_path / "actions.py"
    bad_actions.write_text("print('no list here')\n")
    assert main(["run-task", str(path), "--actions", str(bad_actions)]) == 2
    assert "bad actions file" in json.loads(capsys.readouterr().out)["error"]
