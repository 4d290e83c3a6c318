"""Files on disk: atomic writes, validated JSON reads, and the user's cache folder.

Atomic writes: write a temporary file, fsync it, ``os.replace`` it over the target, fsync the directory. A reader (or
a restarted writer after SIGKILL) sees either the old or the new content, never a torn file. Stray ``.tmp-*`` files
left by a kill are ignored by readers and removed by the next writer of that path.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_ENV_VAR",
    "DEFAULT_FIX",
    "CorruptFileError",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "cache_dir",
    "cache_root",
    "fsync_dir",
    "parse_json",
    "read_json",
]

CACHE_ENV_VAR = "RLANYTHING_CACHE"
"""Environment variable naming the cache root (see :func:`cache_root`)."""

DEFAULT_FIX = "restore the file from a backup, or delete it (or start again in a new run_dir) to begin afresh"
"""What to do about a corrupt file when its reader knows nothing more specific."""


def cache_root() -> Path:
    """Where everything rebuilt on demand is kept.

    ``$RLANYTHING_CACHE``, else ``$XDG_CACHE_HOME/rlanything``, else ``~/.cache/rlanything``. A relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG base-directory spec says.
    """
    base = os.environ.get(CACHE_ENV_VAR)
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "rlanything"


def cache_dir(name: str) -> Path:
    """The cache folder ``name`` under :func:`cache_root`. Everything in it can be deleted at any time."""
    return cache_root() / name


def fsync_dir(path: Path) -> None:
    """Flush a directory entry to disk (after ``os.replace`` or a new file in it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], payload: bytes) -> Path:
    """Write ``payload`` to ``path`` atomically (parents created) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False))


class CorruptFileError(ValueError):
    """A persisted file that exists but cannot be used; the message names the file and what is wrong with it."""


def read_json(path: str | os.PathLike[str], *, expect: type = dict, fix: str = DEFAULT_FIX) -> Any:
    """Read a JSON file written by :func:`atomic_write_json`; every failure names ``path`` and what is wrong.

    Args:
        path: the file.
        expect: the type the top-level value must have (``dict`` by default).
        fix: what the user should do about a corrupt file (ends the one-line message).

    Raises:
        FileNotFoundError: ``path`` does not exist (a state that was never saved, not a damaged one).
        CorruptFileError: the file is empty, not UTF-8, not JSON (truncated or garbage), or of another top-level type.
    """
    target = Path(path)
    return parse_json(target, target.read_bytes(), expect=expect, fix=fix)  # FileNotFoundError names the path


def parse_json(path: Path, payload: bytes, *, expect: type = dict, fix: str = DEFAULT_FIX) -> Any:
    """:func:`read_json` on bytes already read from ``path`` (to check exactly the bytes that will be used)."""
    if not payload.strip():
        raise CorruptFileError(f"{path}: the file is empty (a truncated write?); {fix}")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptFileError(f"{path}: not UTF-8 text (invalid byte at offset {err.start}); {fix}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise CorruptFileError(
            f"{path}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}), truncated or corrupt; {fix}"
        ) from None
    if not isinstance(value, expect):
        raise CorruptFileError(f"{path}: expected a JSON {expect.__name__}, got {type(value).__name__}; {fix}")
    return value
