"""Step labels from a slow oracle within a time limit: each item labelled in its own forked process.

ALFWorld's planner oracle replans every state with fast-downward: ~1-2 s a state in most rooms, tens of seconds in
some kitchens, and without a bound one such game holds a whole evaluation. Here each item (a game's episodes, or one
episode) is labelled in a child process that is killed at ``deadline_s``; the items past it are left out, and the
caller records which (a labelled set that silently dropped the slow rooms would over-represent the easy ones).

The labels are a pure function of the game, the actions and the planner's code, so :class:`StoredLabels` keeps them on
disk under a content hash of the three: every arm and seed, every later run and another checkout on the same machine
read them back instead of planning again (the judge's probe set is labelled once per probe set, not once per run).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from tqdm.auto import tqdm

from rlanything_core.files import atomic_write_json

__all__ = ["StoredLabels", "label_within_deadline"]

K = TypeVar("K", bound=Hashable)
Oracle = Callable[[Any, list[str]], Sequence[int]]


def _labels(oracle: Oracle, task: Any, actions: Sequence[list[str]]) -> list[list[int]]:
    """One item's labels: one list per action sequence."""
    return [list(oracle(task, list(a))) for a in actions]


def _send_labels(oracle: Oracle, task: Any, actions: Sequence[list[str]], conn: Any) -> None:
    """A child's work: label the item, send the labels to the parent."""
    conn.send(_labels(oracle, task, actions))
    conn.close()


def _fail(key: Hashable, running: Mapping[Any, tuple[Any, Any, float]]) -> NoReturn:
    """A child ended without labels: the oracle raised (its traceback went to stderr). Stop the others; raise."""
    for other, _, _ in running.values():
        other.kill()
        other.join()
    raise RuntimeError(f"oracle: failed on {key!r}, not a deadline (see the traceback above)")


def label_within_deadline(
    oracle: Oracle,
    items: Mapping[K, tuple[Any, Sequence[list[str]]]],
    *,
    deadline_s: float | None,
    workers: int = 1,
    progress: bool = False,
) -> dict[K, list[list[int]]]:
    """Label every item's action sequences with ``oracle(task, actions)``; items past ``deadline_s`` are left out.

    Args:
        oracle: ``(task, actions) -> one +1/-1 label per action``.
        items: key -> ``(task, [actions of one episode, ...])``.
        deadline_s: seconds an item may take (``None``: no limit, labelled in this process, in order).
        workers: items labelled at once (forked processes; with a deadline only).
        progress: show a progress bar.

    Returns:
        key -> one label list per action sequence, for the items finished in time, in ``items``' order.

    Raises:
        ValueError: a non-positive ``deadline_s`` or ``workers``.
        RuntimeError: the oracle raised on an item (a failure is not left out as if it were slow).
    """
    if deadline_s is not None and not deadline_s > 0:
        raise ValueError(f"deadline_s: expected > 0 seconds or None, got {deadline_s!r}")
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, got {workers}")
    bar = tqdm(total=len(items), desc="planner labels", disable=not progress)
    if deadline_s is None:
        labels: dict[K, list[list[int]]] = {}
        for key, (task, actions) in items.items():
            labels[key] = _labels(oracle, task, actions)
            bar.update(1)
        bar.close()
        return labels
    # fork: the child only runs the oracle, on the modules the parent has loaded (the planner's included)
    ctx = mp.get_context("fork")
    pending = list(items)
    running: dict[K, tuple[Any, Any, float]] = {}  # key -> (process, its end of the pipe, start time)
    done: dict[K, list[list[int]]] = {}
    while pending or running:
        while pending and len(running) < workers:
            key = pending.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_send_labels, args=(oracle, *items[key], child), daemon=True)
            proc.start()
            child.close()
            running[key] = (proc, parent, time.monotonic())
        for key, (proc, conn, started) in list(running.items()):
            alive = proc.is_alive()  # before the poll: a child that ends between the two has sent its labels
            if conn.poll():  # labels, or the end of a child that had none to send
                try:
                    done[key] = conn.recv()
                except EOFError:
                    _fail(key, running)
            elif alive and time.monotonic() - started < deadline_s:
                continue
            elif not alive:
                _fail(key, running)
            proc.kill()
            proc.join()
            conn.close()
            del running[key]
            bar.update(1)
        time.sleep(0.02)
    bar.close()
    return {key: done[key] for key in items if key in done}


class StoredLabels:
    """An oracle whose labels persist on disk, keyed by a content hash of the task, the actions and the oracle's code.

    ``StoredLabels(oracle, folder, version=..., task_key=...)(task, actions)`` returns ``oracle(task, actions)``, read
    from ``folder`` when the same task (by ``task_key``: e.g. the digest of an ALFWorld game file's bytes), the same
    actions and the same ``version`` (a digest of the oracle's code and of what it runs on) were labelled before, on
    any run. Entries are small JSON files written atomically (a reader sees a whole entry or none; two processes
    labelling the same episode write the same bytes); one that cannot be read is labelled again and replaced. The
    wrapper is a plain callable, so it works inside :func:`label_within_deadline`'s forked children too (each child
    stores what it labels).

    Args:
        oracle: ``(task, actions) -> one label per action`` (a pure function of its inputs).
        folder: where the entries live (created on the first write; everything in it can be deleted).
        version: identifies the oracle's code and the libraries it runs on: a new version never reads an old entry.
        task_key: a stable identity of a task's content (the default: ``str(task)``, for tasks that are their own
            identity).

    Raises:
        ValueError: an empty ``version``.
    """

    def __init__(
        self,
        oracle: Oracle,
        folder: str | os.PathLike[str],
        *,
        version: str,
        task_key: Callable[[Any], str] = str,
    ) -> None:
        if not version:
            raise ValueError("version: expected a non-empty identity of the oracle's code, got ''")
        self.oracle = oracle
        self.folder = Path(folder)
        self.version = version
        self.task_key = task_key
        self.hits = 0
        self.misses = 0

    def key(self, task: Any, actions: Sequence[str]) -> str:
        """The entry's name: the SHA-256 of the version, the task's key and the actions."""
        payload = json.dumps([self.version, self.task_key(task), list(actions)], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def path(self, task: Any, actions: Sequence[str]) -> Path:
        """Where the labels of ``(task, actions)`` are stored."""
        key = self.key(task, actions)
        return self.folder / key[:2] / f"{key}.json"

    def __call__(self, task: Any, actions: list[str]) -> list[int]:
        """``oracle(task, actions)``, from the folder when stored there (else labelled now and stored)."""
        path = self.path(task, actions)
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(stored, list) and len(stored) == len(actions) and all(isinstance(x, int) for x in stored):
                self.hits += 1
                return stored
        except (OSError, ValueError):  # missing or unreadable: only a miss; labelled and (re)written below
            pass
        self.misses += 1
        labels = [int(x) for x in self.oracle(task, list(actions))]
        try:
            atomic_write_json(path, labels)
        except OSError:  # a read-only or full folder: the labels are still right, the next run only slower
            pass
        return labels
