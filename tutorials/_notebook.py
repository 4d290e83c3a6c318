"""Shared by the ``build_*.py`` scripts: turn a list of ``("md" | "code", source)`` cells into a notebook file.

Notebooks are generated without outputs; edit the build script, not the notebook. CI executes every notebook with
``pytest --nbmake tutorials/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def build(cells: Sequence[tuple[str, str]]) -> nbformat.NotebookNode:
    """The notebook, without outputs."""
    nb = new_notebook(cells=[new_markdown_cell(s) if kind == "md" else new_code_cell(s) for kind, s in cells])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def write(cells: Sequence[tuple[str, str]], target: Path) -> None:
    """Write the notebook and say where."""
    nbformat.write(build(cells), target)
    print(f"wrote {target}")
