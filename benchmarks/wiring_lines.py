"""Lines of the ``experiments/`` wiring (its target: at most 600 lines), file by file.

    python -m benchmarks.wiring_lines

The wiring is every module of ``experiments/`` (at any depth; ``conf/`` and ``results/`` hold data) that builds the
objects of a run from a config. Left out (:data:`NOT_WIRING`): the ablation's analysis and its driver (``ablate.py``,
``ablation_*.py``: statistics, tables, plots over finished runs), the warm start (``warm_start*.py``: a separate
pre-training script), the memory planner's command line (``memory_plan.py``), ``reuse.py`` and ``eval_record.py``
(reading finished runs). For each file: its physical lines (what ``wc -l`` counts) and its imports inside a
function (the second measure of the wiring's size).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
from pathlib import Path

__all__ = ["NOT_WIRING", "function_imports", "main", "wiring_files"]

ROOT = Path(__file__).resolve().parents[1]

NOT_WIRING = ("ablate.py", "ablation_*.py", "warm_start*.py", "memory_plan.py", "reuse.py", "eval_record.py")
"""File name patterns of ``experiments/`` that are not wiring (the module docstring says why)."""


def wiring_files(root: Path = ROOT) -> list[Path]:
    """The wiring modules under ``root/experiments`` (any depth, outside ``conf/`` and ``results/``), sorted by path."""
    folder = root / "experiments"
    if not folder.is_dir():
        raise FileNotFoundError(f"no experiments/ folder under {root}")
    files = [p for p in folder.rglob("*.py") if p.relative_to(folder).parts[0] not in ("conf", "results")]
    return sorted(p for p in files if not any(fnmatch.fnmatch(p.name, pat) for pat in NOT_WIRING))


def function_imports(source: str) -> int:
    """The ``import`` statements of ``source`` that sit inside a function (or a method)."""

    def count(node: ast.AST, in_function: bool) -> int:
        here = in_function and isinstance(node, (ast.Import, ast.ImportFrom))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        return int(here) + sum(count(child, inside) for child in ast.iter_child_nodes(node))

    return count(ast.parse(source), False)


def main(argv: list[str] | None = None) -> None:
    """Print one row per wiring file (lines, imports inside functions) and the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout)")
    args = parser.parse_args(argv)
    total_lines = total_imports = 0
    for path in wiring_files(args.root):
        text = path.read_text()
        lines, imports = len(text.splitlines()), function_imports(text)
        total_lines, total_imports = total_lines + lines, total_imports + imports
        print(f"{lines:5d} {imports:3d}  {path.relative_to(args.root)}")
    print(f"{total_lines:5d} {total_imports:3d}  total (lines, imports inside functions)")


if __name__ == "__main__":
    main()
