"""The tutorials as committed: each notebook paired with its percent script, executed, small, free of machine paths.

CI also executes every notebook (``pytest --nbmake tutorials``); these tests check what a reader sees on the
repository page, which is the committed file, not CI's run of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
MAX_NOTEBOOK_BYTES = 1_500_000  # plots are PNGs at screen size; a multi-megabyte notebook is a mistake
MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[^/\s]+/|/tmp/[^\s\"']+|\.venv/lib)")


def _cells(nb: object) -> list[tuple[str, str]]:
    return [(c["cell_type"], c["source"].strip()) for c in nb["cells"]]  # type: ignore[index]


def test_there_are_tutorials() -> None:
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_and_script_agree(notebook: Path) -> None:
    script = notebook.with_suffix(".py")
    assert script.exists(), f"{notebook.name} has no paired script {script.name}: run `jupytext --sync {notebook}`"
    from_script = jupytext.read(script)
    from_notebook = jupytext.read(notebook)
    assert _cells(from_script) == _cells(from_notebook), (
        f"{script.name} and {notebook.name} disagree: edit one, then `jupytext --sync tutorials/*.ipynb`"
    )
    assert from_notebook.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_executed_small_and_relocatable(notebook: Path) -> None:
    raw = notebook.read_text()
    assert len(raw.encode()) <= MAX_NOTEBOOK_BYTES, f"{notebook.name} is {len(raw.encode())} bytes"
    nb = json.loads(raw)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), (
        f"{notebook.name} is committed unexecuted: run `make tutorials`"
    )
    assert any(c.get("outputs") for c in code)
    for cell in code:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{notebook.name} was committed with an error output"
            text = json.dumps({k: v for k, v in out.items() if k != "data"}) + json.dumps(
                {k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")}
            )
            hit = MACHINE_PATH.search(text)
            assert hit is None, f"{notebook.name} shows a machine path in an output: {hit.group(0) if hit else ''}"
