"""``benchmarks/wiring_lines.py``: which files count as the wiring, and the imports inside functions it counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.wiring_lines import function_imports, main, wiring_files


def test_the_wiring_leaves_out_the_analysis_and_the_tools(tmp_path: Path) -> None:
    for name in ("builders.py", "ablate.py", "ablation_stats.py", "warm_start_encoder.py", "memory_plan.py",
                 "reuse.py", "eval_record.py", "settings/coding.py", "conf/x.py"):  # fmt: skip
        (tmp_path / "experiments" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "experiments" / name).write_text("x = 1\n")
    names = [p.relative_to(tmp_path / "experiments").as_posix() for p in wiring_files(tmp_path)]
    assert names == ["builders.py", "settings/coding.py"]


def test_only_imports_inside_functions_are_counted() -> None:
    source = (
        "import os\n\ndef f():\n    import json\n    from x import y\n    def g():\n        import q\n\n"
        "class C:\n    import w\n    def m(self):\n        import z\n"
    )
    assert function_imports(source) == 4  # json, y, q (once, though inside two functions), z; not os, not w
    assert function_imports("import os\nfrom a import b\n") == 0


def test_the_table_sums_its_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "a.py").write_text("def f():\n    import os\n")
    (tmp_path / "experiments" / "b.py").write_text("x = 1\n")
    main(["--root", str(tmp_path)])
    rows = capsys.readouterr().out.splitlines()
    assert rows[-1].split()[:2] == ["3", "1"] and len(rows) == 3


def test_a_root_without_experiments_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no experiments/ folder"):
        wiring_files(tmp_path)
