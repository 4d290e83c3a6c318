"""Step labels from a slow oracle within a time limit: each item labelled in its own forked process.

ALFWorld's planner oracle replans every state with fast-downward: ~1-2 s a state in most rooms, tens of seconds in
some kitchens, and without a bound one such game holds a whole evaluation. Here each item (a game's episodes, or one
episode) is labelled in a child process that is killed at ``deadline_s``; the items past it are left out, and the
caller records which (a labelled set that silently dropped the slow rooms would over-represent the easy ones).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from tqdm.auto import tqdm

__all__ = ["label_within_deadline"]

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
