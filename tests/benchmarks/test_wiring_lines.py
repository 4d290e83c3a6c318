"""``benchmarks/wiring_lines.py``: the wiring named file by file, every other file classified, the counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import wiring_lines
from benchmarks.wiring_lines import NOT_WIRING, WIRING, function_imports, main, unclassified, wiring_files

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n")


def test_this_checkout_has_every_wiring_file_and_no_unclassified_one() -> None:
    groups = wiring_files(REPO)
    assert [p.relative_to(REPO).as_posix() for p in groups["entry points"]] == list(WIRING["entry points"])
    assert unclassified(REPO) == []
    # what the issue of name patterns was: analysis and research scripts are nowhere in the list
    named = [p for files in WIRING.values() for p in files]
    assert not any("judge_study" in p or "training_gain" in p or "analysis" in p for p in named)


def test_a_new_file_must_be_classified(tmp_path: Path) -> None:
    _tree(tmp_path, [p for files in WIRING.values() for p in files] + list(NOT_WIRING))
    assert unclassified(tmp_path) == []
    _tree(tmp_path, ["experiments/judge_study.py"])
    assert unclassified(tmp_path) == ["experiments/judge_study.py"]
    with pytest.raises(ValueError, match="experiments/judge_study.py"):
        wiring_files(tmp_path)


def test_a_missing_wiring_file_is_named(tmp_path: Path) -> None:
    _tree(tmp_path, [p for p in WIRING["entry points"] if p != "experiments/ablate.py"])
    with pytest.raises(FileNotFoundError, match="experiments/ablate.py"):
        wiring_files(tmp_path)


def test_only_imports_inside_functions_are_counted() -> None:
    source = (
        "import os\n\ndef f():\n    import json\n    from x import y\n    def g():\n        import q\n\n"
        "class C:\n    import w\n    def m(self):\n        import z\n"
    )
    assert function_imports(source) == 4  # json, y, q (once, though inside two functions), z; not os, not w
    assert function_imports("import os\nfrom a import b\n") == 0


def test_the_table_sums_its_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(wiring_lines, "WIRING", {"a": ("experiments/a.py",), "b": ("experiments/b.py",)})
    monkeypatch.setattr(wiring_lines, "NOT_WIRING", {})
    monkeypatch.setattr(wiring_lines, "CLASSIFIED_FOLDERS", ("experiments",))
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "a.py").write_text("def f():\n    import os\n")
    (tmp_path / "experiments" / "b.py").write_text("x = 1\n")
    main(["--root", str(tmp_path)])
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[:2] for r in rows] == [["2", "1"], ["2", "1"], ["1", "0"], ["1", "0"], ["3", "1"]]
    assert rows[-1].endswith("total (lines, imports inside functions)")
