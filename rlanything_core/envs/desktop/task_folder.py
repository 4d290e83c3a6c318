"""A folder of OSWorld-format tasks: OSWorld's own ``evaluation_examples`` checkout, or a folder of one's own JSONs.

Layouts, tried in order:

1. OSWorld's: ``<dir>/test_all.json`` (``{domain: [task id, ...]}``) and ``<dir>/examples/<domain>/<id>.json``; the
   tasks are those the index lists for the chosen domains (all domains of the index by default).
2. ``<dir>/examples/<domain>/*.json`` without an index: every JSON of the chosen domains' folders.
3. ``<dir>/*.json``: one's own tasks, all of them (``domains`` does not apply).

Each task is loaded with :func:`~.task.load_task` against the file cache ``cache_dir`` (OSWorld's layout, see
:mod:`.osworld_cache`). A task that cannot run here (a missing cache file, or a check outside the supported subset)
is either an error naming the task and the reason, or, with ``skip_unsupported``, kept out and listed in
:attr:`TaskFolder.refused` with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rlanything_core.envs.desktop.task import DesktopTask, UnsupportedTaskError, load_task

__all__ = ["TaskFolder", "find_task_files", "load_task_folder"]


def find_task_files(tasks_dir: str | Path, domains: list[str] | tuple[str, ...] | None = None) -> list[Path]:
    """The task JSON files of ``tasks_dir`` (module docstring), in index order or sorted.

    Raises:
        ValueError: the folder does not exist, a domain is not in it, or it holds no task file.
    """
    root = Path(tasks_dir)
    if not root.is_dir():
        raise ValueError(f"tasks_dir {str(root)!r} is not a folder")
    index, examples = root / "test_all.json", root / "examples"
    if examples.is_dir():
        if index.is_file():
            listing = json.loads(index.read_text())
            if not isinstance(listing, dict):
                raise ValueError(f"{index} must map each domain to a list of task ids")
            # by default the domains the checkout has (a partial checkout indexes more than it ships)
            chosen = list(domains) if domains else sorted(d for d in listing if (examples / d).is_dir())
            unknown = [d for d in chosen if d not in listing]
            if unknown:
                raise ValueError(f"domains {unknown} are not in {index} (it has {sorted(listing)})")
            files = [examples / d / f"{task_id}.json" for d in chosen for task_id in listing[d]]
            missing = [f for f in files if not f.is_file()]
            if missing:
                raise ValueError(f"{len(missing)} task files listed in {index} are missing, e.g. {missing[0]}")
        else:
            chosen = list(domains) if domains else sorted(p.name for p in examples.iterdir() if p.is_dir())
            unknown = [d for d in chosen if not (examples / d).is_dir()]
            if unknown:
                raise ValueError(f"domains {unknown} have no folder under {examples}")
            files = [p for d in chosen for p in sorted((examples / d).glob("*.json"))]
    else:
        files = sorted(root.glob("*.json"))
    if not files:
        raise ValueError(f"tasks_dir {str(root)!r} holds no task JSON (see the layouts in the docs)")
    return files


@dataclass
class TaskFolder:
    """The tasks of a folder that load, and those refused with their reasons."""

    tasks: list[DesktopTask] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def load_task_folder(
    tasks_dir: str | Path,
    *,
    domains: list[str] | tuple[str, ...] | None = None,
    cache_dir: str | Path | None = None,
    skip_unsupported: bool = False,
) -> TaskFolder:
    """Load every task of ``tasks_dir`` (module docstring).

    Raises:
        ValueError: the folder or the cache folder is missing, or no task loads.
        UnsupportedTaskError: a task does not load and ``skip_unsupported`` is off (the message names the file).
    """
    if cache_dir is not None and not Path(cache_dir).is_dir():
        raise ValueError(f"cache_dir {str(cache_dir)!r} is not a folder")
    folder = TaskFolder()
    for path in find_task_files(tasks_dir, domains):
        try:
            folder.tasks.append(load_task(path, cache_dir=cache_dir))
        except UnsupportedTaskError as exc:
            if not skip_unsupported:
                raise UnsupportedTaskError(f"{path}: {exc}") from None
            folder.refused[str(path)] = str(exc)
    if not folder.tasks:
        raise ValueError(f"no task of {str(tasks_dir)!r} loads ({len(folder.refused)} refused)")
    return folder
