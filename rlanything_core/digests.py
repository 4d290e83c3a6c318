"""Content digests for caches keyed by what made a result: data files' bytes, modules' code, installed versions.

A cache keyed by a file's path or by a git revision misses in another checkout of the same code and data, and hits
after an edit that changes what the cached value would be; keyed by these digests it does neither.
:func:`source_digest` reads a module's *code*: its syntax tree without docstrings, so that a comment, a docstring or a
reformatting does not invalidate a cache while any change to what the code does (a constant, an expression, an
import) does.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["PACKAGE_ROOT", "distribution_versions", "file_digest", "files_digest", "imported_modules", "source_digest"]

PACKAGE_ROOT = Path(__file__).resolve().parent
"""The folder of ``rlanything_core`` (module paths given to :func:`source_digest` are relative to it)."""


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex).

    Raises:
        ValueError: ``path`` is not a file.
    """
    target = Path(path)
    if not target.is_file():
        raise ValueError(f"path: expected an existing file, got {str(target)!r}")
    return hashlib.sha256(target.read_bytes()).hexdigest()


def files_digest(paths: Iterable[str | os.PathLike[str]]) -> str:
    """One SHA-256 over the contents of ``paths``, in their order (not their names: a moved copy digests alike).

    Raises:
        ValueError: a path is not a file.
    """
    h = hashlib.sha256()
    for path in paths:
        h.update(bytes.fromhex(file_digest(path)))
    return h.hexdigest()


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of the module and of every class and function removed (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
                body[0].value.value, str
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_digest(modules: Iterable[str], *, root: Path = PACKAGE_ROOT) -> str:
    """One SHA-256 over the code of ``modules`` (paths relative to ``root``, e.g. ``"envs/alfworld/oracle.py"``).

    The code is each file's syntax tree without docstrings (``ast.dump``): comments, docstrings and layout do not
    count; names, constants and statements do. The paths are part of the digest (a module's role is its place).

    Raises:
        ValueError: a module is not a file under ``root``.
    """
    h = hashlib.sha256()
    for module in modules:
        path = root / module
        if not path.is_file():
            raise ValueError(f"modules: expected files under {root}, got {module!r}")
        tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8")))
        h.update(module.encode() + b"\0" + ast.dump(tree, annotate_fields=False).encode() + b"\0")
    return h.hexdigest()


def _module_file(name: str, root: Path) -> str | None:
    """``rlanything_core.a.b`` -> ``"a/b.py"`` or ``"a/b/__init__.py"`` (relative to ``root``), or ``None``."""
    parts = name.split(".")[1:]
    for candidate in (Path(*parts).with_suffix(".py") if parts else None, Path(*parts, "__init__.py")):
        if candidate is not None and (root / candidate).is_file():
            return candidate.as_posix()
    return None


def _imports_of(module: str, root: Path) -> set[str]:
    """The package modules that ``module`` (a path under ``root``) imports, anywhere in it (functions included)."""
    package = root.name
    dotted = [package, *Path(module).with_suffix("").parts]
    if dotted[-1] == "__init__":
        dotted = dotted[:-1]
    here = dotted if module.endswith("__init__.py") else dotted[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse((root / module).read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*here[: len(here) - node.level + 1], *([base] if base else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            if name == package or name.startswith(package + "."):
                file = _module_file(name, root)
                if file is not None:
                    found.add(file)
    return found


def imported_modules(module: str, *, root: Path = PACKAGE_ROOT) -> list[str]:
    """``module`` and every package module it imports, directly or not (paths relative to ``root``, sorted).

    What a result computed by ``module`` can depend on among the package's code: :func:`source_digest` of this list
    changes with any of it, a module added by a later refactor included. Imports are read from the source (``ast``),
    nothing is imported.

    Raises:
        ValueError: ``module`` is not a file under ``root``.
    """
    if not (root / module).is_file():
        raise ValueError(f"module: expected a file under {root}, got {module!r}")
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(sorted(_imports_of(current, root) - seen))
    return sorted(seen)


def distribution_versions(names: Iterable[str]) -> dict[str, str]:
    """``{distribution: installed version}`` (``"absent"`` for one not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out
