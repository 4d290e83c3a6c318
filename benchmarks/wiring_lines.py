"""Lines of the wiring (the entry points and the code that builds a run from a config), file by file.

    python -m benchmarks.wiring_lines

The wiring is named file by file (:data:`WIRING`), not by name patterns: a pattern let research scripts and analysis
escape the count. ``entry points``: ``experiments/`` (thin shells; target at most 400 lines in all) and the installed
command; ``assembly``: the modules of ``rlanything_core/assembly`` that turn a composed config into a run's objects.
Every other ``.py`` file under ``experiments/`` and ``rlanything_core/assembly/`` must be named in
:data:`NOT_WIRING` with its reason, so that a new file is classified, never silently left out. For each file: its
physical lines (what ``wc -l`` counts) and its imports inside a function (the second measure of the wiring's size).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

__all__ = ["CLASSIFIED_FOLDERS", "NOT_WIRING", "WIRING", "function_imports", "main", "unclassified", "wiring_files"]

ROOT = Path(__file__).resolve().parents[1]

WIRING: dict[str, tuple[str, ...]] = {
    "entry points": (
        "experiments/__init__.py",
        "experiments/train.py",
        "experiments/ablate.py",
        "rlanything_core/cli.py",
        "rlanything_core/__main__.py",
        "rlanything_core/ablation/__main__.py",
    ),
    "assembly": (
        "rlanything_core/assembly/__init__.py",
        "rlanything_core/assembly/build.py",
        "rlanything_core/assembly/components.py",
        "rlanything_core/assembly/setting.py",
        "rlanything_core/assembly/agent.py",
        "rlanything_core/assembly/coding.py",
        "rlanything_core/assembly/backends.py",
        "rlanything_core/assembly/trainer.py",
        "rlanything_core/assembly/resolvers.py",
        "rlanything_core/assembly/train_app.py",
    ),
}
"""The wiring's files by group, relative to the repository root."""

NOT_WIRING: dict[str, str] = {
    "rlanything_core/assembly/checks.py": "config validation (what a config may say), not construction",
    "rlanything_core/assembly/schema.py": "the config's dataclass schema",
    "rlanything_core/assembly/memory_plan.py": "a per-GPU memory estimate of a config",
    "rlanything_core/assembly/eval_record.py": "reading a finished run's evaluation back",
}
"""Files of :data:`CLASSIFIED_FOLDERS` that are not wiring, each with its reason."""

CLASSIFIED_FOLDERS = ("experiments", "rlanything_core/assembly")
"""The folders (direct ``.py`` files) whose every file is either wiring or named in :data:`NOT_WIRING`."""


def unclassified(root: Path = ROOT) -> list[str]:
    """The ``.py`` files of :data:`CLASSIFIED_FOLDERS` under ``root`` named in neither list (should be none)."""
    named = {p for files in WIRING.values() for p in files} | set(NOT_WIRING)
    present = [p.relative_to(root).as_posix() for folder in CLASSIFIED_FOLDERS for p in (root / folder).glob("*.py")]
    return sorted(p for p in present if p not in named)


def wiring_files(root: Path = ROOT) -> dict[str, list[Path]]:
    """The wiring's files under ``root`` by group.

    Raises:
        FileNotFoundError: a file of :data:`WIRING` is missing (moved or renamed: update the list).
        ValueError: a file of :data:`CLASSIFIED_FOLDERS` is in neither list.
    """
    missing = [p for files in WIRING.values() for p in files if not (root / p).is_file()]
    if missing:
        raise FileNotFoundError(f"WIRING names files that are not under {root}: {', '.join(missing)}")
    loose = unclassified(root)
    if loose:
        raise ValueError(f"classify these files in WIRING or NOT_WIRING (benchmarks/wiring_lines.py): {loose}")
    return {group: [root / p for p in files] for group, files in WIRING.items()}


def function_imports(source: str) -> int:
    """The ``import`` statements of ``source`` that sit inside a function (or a method)."""

    def count(node: ast.AST, in_function: bool) -> int:
        here = in_function and isinstance(node, (ast.Import, ast.ImportFrom))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        return int(here) + sum(count(child, inside) for child in ast.iter_child_nodes(node))

    return count(ast.parse(source), False)


def main(argv: list[str] | None = None) -> None:
    """Print one row per wiring file (lines, imports inside functions), each group's subtotal and the total."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout)")
    args = parser.parse_args(argv)
    total_lines = total_imports = 0
    for group, paths in wiring_files(args.root).items():
        lines = imports = 0
        for path in paths:
            text = path.read_text()
            n, k = len(text.splitlines()), function_imports(text)
            lines, imports = lines + n, imports + k
            print(f"{n:5d} {k:3d}  {path.relative_to(args.root).as_posix()}")
        print(f"{lines:5d} {imports:3d}  {group}")
        total_lines, total_imports = total_lines + lines, total_imports + imports
    print(f"{total_lines:5d} {total_imports:3d}  total (lines, imports inside functions)")


if __name__ == "__main__":
    main()
