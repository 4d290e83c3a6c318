"""``rlanything_core.settings.coding.CodingTasks``: its checks name the parameter; its problems, roots and split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlanything_core.sandbox import Sandbox
from rlanything_core.settings import SettingError
from rlanything_core.settings.coding import CODING_FILES, CodingTasks, first


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """Three Kick Start, two CodeContests and two LeetCode problems (one in the LiveCodeBench v5 window)."""
    io = [{"input": "1\n", "output": "1\n"}]
    _write(tmp_path / CODING_FILES["kickstart"],
           [{"id": f"ks{k}", "statement": "s" * (10 + k), "tests": io * 10} for k in range(3)])  # fmt: skip
    tests = {"inputs": ["1"], "outputs": ["1"]}
    statements = ["d" * 99, "d" * 19]
    _write(tmp_path / CODING_FILES["codecontests"],
           [{"id": f"cc{k}", "description": statements[k], "tests": tests} for k in range(2)])  # fmt: skip
    _write(tmp_path / CODING_FILES["leetcode_lcb"],
           [{"task_id": f"lc{k}", "entry_point": "f", "problem_description": "p", "test": "", "prompt": "",
             "also_in_lcb_v5_window": k == 1} for k in range(2)])  # fmt: skip
    return tmp_path


def test_training_problems_interleave_the_sets_shortest_first_and_skip_long_statements(data_dir: Path) -> None:
    tasks = CodingTasks(data_dir=str(data_dir), max_statement_chars=50)
    train, evals = tasks.problems()
    assert [p.id for p in train] == ["ks0", "cc1"]  # zip stops at the shorter set; cc0 (99 chars) is skipped
    assert [p.id for p in evals] == ["leetcode/lc1"]  # the v5 window only


def test_roots_keep_gt_tests_and_the_split_runs_in_the_sandbox(data_dir: Path) -> None:
    tasks = CodingTasks(data_dir=str(data_dir), train_sets=("kickstart",), train_problems=2, gt_tests=3)
    roots, splits = tasks.roots_and_splits(Sandbox())
    assert [r.task_id for r in roots] == ["ks0", "ks1"]
    assert [len(r.data["test_input"]) for r in roots] == [3, 3]
    assert [s.name for s in splits] == ["lcb_v5"] and len(splits[0].tasks) == 1


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"train_sets": ("kickstart", "atcoder")}, "train_sets"),
        ({"eval_set": "humaneval"}, "eval_set"),
        ({"livebench_file": "/no/such.jsonl"}, "livebench_file"),
    ],
)
def test_a_value_that_cannot_work_is_refused_naming_its_parameter(
    data_dir: Path, kwargs: dict[str, object], param: str
) -> None:
    with pytest.raises(SettingError) as err:
        CodingTasks(data_dir=str(data_dir), **kwargs).check()  # type: ignore[arg-type]
    assert err.value.param == param


def test_missing_data_is_refused_naming_data_dir(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="does not exist") as err:
        CodingTasks(data_dir=str(tmp_path)).check()
    assert err.value.param == "data_dir"


def test_first_takes_all_items_for_none() -> None:
    assert first(range(5), None) == [0, 1, 2, 3, 4] and first(range(5), 2) == [0, 1]
