"""Reuse a finished run of another results folder when it is the very run about to start.

A run is a deterministic function of its resolved config (seeded models and episodes, a deterministic engine), so a
finished run in folder ``A`` whose ``config.yaml``, with ``A``'s paths mapped to ``B``'s, equals the config about to
run in ``B`` is the run ``B`` would compute. ``+profile=full`` reuses the default's seeds this way (``reuse_from:
default``) and computes only its extra seed. The code revision is not compared: both folders' ``meta.json`` record
it, and reuse across revisions that change the loop would be wrong.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from rlanything_core.files import atomic_write_bytes

__all__ = ["reuse_file", "reuse_run"]


def _swap(path: Path, target: Path) -> None:
    """Move ``path`` to ``target`` (replacing it); a crash leaves either the old target or the new one."""
    if target.exists():
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    os.replace(path, target)


def reuse_run(source: Path, target: Path, expected_config: str, source_root: Path, target_root: Path) -> bool:
    """Copy the finished run ``source`` to ``target`` if its config, mapped to ``target_root``, is ``expected_config``.

    Args:
        source: the other folder's run (finished: the caller checks).
        target: where this run lives (may hold an unfinished attempt, which is replaced).
        expected_config: ``OmegaConf.to_yaml(cfg, resolve=True)`` of the run about to start.
        source_root: the other results folder (its paths appear in the source's config).
        target_root: this results folder.

    Returns:
        Whether the run was reused.
    """
    config = source / "config.yaml"
    if not config.is_file():
        return False
    mapped = config.read_text().replace(str(source_root), str(target_root))
    if yaml.safe_load(mapped) != yaml.safe_load(expected_config):  # key order may differ (config group order)
        return False
    partial = target.with_name(target.name + ".reusing")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    (partial / "config.yaml").write_text(mapped)
    _swap(partial, target)
    return True


def reuse_file(source: Path, target: Path, source_record: str, expected_record: str) -> bool:
    """Copy ``source`` to ``target`` atomically if ``source_record`` (how it was made) is ``expected_record``.

    The seed workers of one ablation reuse the same shared files (the judge's probe set) at the same moment: each
    writes its own temporary file (``atomic_write_bytes``), so neither can move the other's away (with one shared
    ``.reusing`` name, the second worker's rename failed once the first had moved the file).
    """
    if not source.is_file() or source_record != expected_record:
        return False
    atomic_write_bytes(target, source.read_bytes())
    return True
