"""The durable task pool: slots of root/active tasks, pending rewrites, and the accept/reject history.

Layout under ``run_dir``::

    pool/state.json          slots, pending candidates, events (atomically replaced on every save)
    pool/tasks/<id>.json     one file per task version (written before the state that references it)
    pool/.writer.lock        flock held by the single writer process

Crash safety: ``save`` writes every new task file (temp, fsync, ``os.replace``, fsync dir) and then the state the
same way, so after a SIGKILL at any point ``TaskPool.load`` sees the previous or the new state, and every task the
state names exists. One writer: in a multi-process run only the process built with ``writer=True`` (or that called
``claim_writer()``: global rank 0 once the process group exists) may save; it takes an exclusive ``flock`` on
``.writer.lock`` (released by the kernel if it dies), other ranks hold ``writer=False`` pools (``load``, or
``from_snapshot`` of the writer's broadcast ``snapshot()``) and get a ``RuntimeError`` from ``save``. There is no
global state: a pool is an object.

Acceptance (arXiv 2602.02488): a pending rewrite of a task with success rate ``acc`` is rolled out in the next
iteration; with its fresh success rate ``acc_new`` it replaces the slot's active task iff
``accept_rewrite(direction, acc, acc_new, band=band)``; either way it leaves ``pending``.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.adaptation.difficulty import DEFAULT_BAND, DifficultyCritic, Direction, accept_rewrite
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.files import (
    CorruptFileError,
    atomic_write_bytes,
    atomic_write_json,
    parse_json,
    read_json,
)

__all__ = ["Decision", "PendingTask", "Slot", "TaskPool"]

STATE_VERSION = 1
_STATE_FIX = ("resume from a checkpoint whose pool snapshot (pool/snapshots/iter_<n>.json) is intact, which restores "
              "state.json from it, or start again in a new run_dir")
_SNAPSHOT_FIX = ("state.json was left as it was; restore the snapshot from a backup, or start again in a new run_dir "
                 "(or from an earlier checkpoint whose snapshot is intact)")
_EVENT_TYPES = frozenset({"candidate", "accept", "reject", "rate"})


def _field(path: Path, state: dict[str, Any], key: str, kind: type) -> Any:
    """``state[key]``, checked to be a ``kind``; a missing or mistyped key is an error naming the file and key."""
    if key not in state:
        raise CorruptFileError(f"{path}: missing key {key!r} (the file is not a complete pool state)")
    if not isinstance(state[key], kind) or isinstance(state[key], bool):
        raise CorruptFileError(f"{path}: {key!r} must be a {kind.__name__}, got {type(state[key]).__name__}")
    return state[key]


def _check_version(path: Path, state: dict[str, Any]) -> None:
    if state.get("state_version") != STATE_VERSION:
        raise CorruptFileError(f"{path}: unsupported pool state version {state.get('state_version')!r} (this code "
                               f"reads version {STATE_VERSION}); use the rlanything version that wrote it")


def _file_name(task_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in task_id)
    return f"{safe[-150:]}-{_hash_str(task_id) % 10**8:08d}.json"


def _hash_str(text: str) -> int:
    """A process-independent string hash (Python's ``hash`` is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass
class Slot:
    """One line of the pool: the root task, the task currently trained on, and how many rewrites replaced it."""

    slot_id: str
    root_id: str
    active_id: str
    version: int = 0


@dataclass
class PendingTask:
    """A valid candidate waiting for its rollouts."""

    slot_id: str
    candidate: Candidate
    parent_acc: float
    created_iteration: int


@dataclass(frozen=True)
class Decision:
    """The acceptance rule's verdict on one pending task."""

    task_id: str
    slot_id: str
    accepted: bool
    direction: str
    parent_acc: float
    acc: float


@dataclass
class TaskPool:
    """Slots, pending rewrites and history; persisted under ``run_dir / "pool"``.

    Build with ``TaskPool.create(run_dir, roots)`` or ``TaskPool.load(run_dir)``; see the module docstring.

    Args:
        run_dir: the run directory.
        band: the success-rate band ``(low, high)``.
        writer: whether this process may save (rank 0); takes the writer lock.
    """

    run_dir: Path
    band: tuple[float, float] = DEFAULT_BAND
    writer: bool = True
    slots: dict[str, Slot] = field(default_factory=dict)
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    pending: dict[str, PendingTask] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        self._saved_files: set[str] = set()
        self._lock_fd: int | None = None
        if self.writer:
            self._take_lock()

    def _take_lock(self) -> None:
        (self.run_dir / "pool").mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_dir / "pool" / ".writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            raise RuntimeError(f"run_dir: another process holds the pool writer lock in {self.run_dir}") from err
        self._lock_fd = fd
        for folder in (self.run_dir / "pool", self.run_dir / "pool" / "tasks"):
            for stray in folder.glob(".tmp-*") if folder.is_dir() else ():
                stray.unlink(missing_ok=True)  # torn writes of a killed writer; safe under the lock

    def claim_writer(self) -> None:
        """Become the writer now (take the lock): for a pool built before the process group decided who writes."""
        if not self.writer:
            self._take_lock()
            self.writer = True

    # ----------------------------------------------------------------------------------------------- lifecycle
    @classmethod
    def create(cls, run_dir: str | os.PathLike[str], roots: Iterable[TaskSpec], *,
               band: tuple[float, float] = DEFAULT_BAND, writer: bool = True) -> TaskPool:
        """A new pool with one slot per root task (slot id = root task id).

        Raises ``FileExistsError`` when ``run_dir`` already holds a saved pool: saving a new one over it would erase
        its history (use ``load``, or another ``run_dir``).
        """
        state = Path(run_dir) / "pool" / "state.json"
        if state.exists():
            raise FileExistsError(f"run_dir: {state} already holds a task pool; load it with TaskPool.load (or use "
                                  "a new run_dir) rather than creating one over its history")
        pool = cls(Path(run_dir), band=band, writer=writer)
        try:
            for task in roots:
                if task.task_id in pool.slots:
                    raise ValueError(f"roots: duplicate task id {task.task_id!r}")
                pool.tasks[task.task_id] = task
                pool.slots[task.task_id] = Slot(task.task_id, task.root_id, task.task_id, task.version)
        except BaseException:
            pool.close()
            raise
        return pool

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str], *, writer: bool = True) -> TaskPool:
        """Load the last saved state.

        Raises:
            FileNotFoundError: no state was saved.
            CorruptFileError: a state or task file is missing, empty, truncated, garbage, malformed or inconsistent
                (e.g. a slot's active task disagrees with the accept history); one line naming the file, what is
                wrong and what to do.
            RuntimeError: ``writer=True`` and another process holds the writer lock.

        The writer lock taken here is released again whenever loading fails, so a retry in this process can work.
        """
        base = Path(run_dir) / "pool"
        path = base / "state.json"
        state = read_json(path, fix=_STATE_FIX)
        _check_version(path, state)
        band = _field(path, state, "band", list)
        pool = cls(Path(run_dir), band=tuple(band), writer=writer)  # type: ignore[arg-type]
        try:
            pool._fill(path, state)
        except ValueError as err:  # CorruptFileError included: one line, what is wrong and what to do
            pool.close()
            raise CorruptFileError(str(err) if _STATE_FIX in str(err) else f"{err}; {_STATE_FIX}") from None
        except BaseException:
            pool.close()
            raise
        return pool

    def restore(self, snapshot: str | os.PathLike[str], *, persist: bool = True) -> TaskPool:
        """Make ``snapshot`` (a copy of an earlier ``state.json``) the saved state; return the pool loaded from it.

        The snapshot is read once and checked completely (JSON, version, every task file it names, consistency)
        before those same bytes replace ``state.json`` (atomically): a corrupt snapshot raises
        :class:`CorruptFileError` naming it and leaves ``state.json`` and this pool as they were (it used
        to be copied over a good state first). The writer only; this pool is closed and its lock passes on.
        With ``persist=False`` nothing is written: the returned pool holds the snapshot's state until its next
        ``save`` (for a state that a later restore may still replace).

        Raises:
            CorruptFileError: the snapshot, or a task file it names, is corrupt, missing or inconsistent.
            RuntimeError: this pool is not the writer.
        """
        if not self.writer:
            raise RuntimeError("restore: this pool was loaded with writer=False (only the writer rank may restore)")
        path = Path(snapshot)
        try:
            payload = path.read_bytes()
            state = parse_json(path, payload, fix=_SNAPSHOT_FIX)
            _check_version(path, state)
            band = tuple(_field(path, state, "band", list))
            probe = TaskPool(self.run_dir, band=band, writer=False)  # type: ignore[arg-type]
            probe._fill(path, state, base=self.run_dir / "pool")
        except CorruptFileError as err:
            raise CorruptFileError(str(err) if _SNAPSHOT_FIX in str(err) else f"{err}; {_SNAPSHOT_FIX}") from None
        except (FileNotFoundError, ValueError) as err:
            raise CorruptFileError(f"pool snapshot {path}: {err}; {_SNAPSHOT_FIX}") from None
        if not persist:
            self.close()
            probe.claim_writer()
            return probe
        atomic_write_bytes(self.run_dir / "pool" / "state.json", payload)
        self.close()
        return TaskPool.load(self.run_dir, writer=True)

    def snapshot(self) -> dict[str, Any]:
        """The whole pool as plain data (the state ``save`` writes and every task record), e.g. to broadcast."""
        return copy.deepcopy({"state": self._state(), "tasks": {tid: t.to_dict() for tid, t in self.tasks.items()}})

    @classmethod
    def from_snapshot(cls, run_dir: str | os.PathLike[str], snapshot: dict[str, Any]) -> TaskPool:
        """A read-only pool (``writer=False``) holding ``snapshot`` (from ``snapshot()``), without reading any file.

        What the other ranks build from the writer's broadcast: a re-read of ``state.json`` on shared storage may
        return an older version (NFS attribute caching).
        """
        path = Path(run_dir) / "pool" / "state.json"
        state = snapshot["state"]
        pool = cls(Path(run_dir), band=tuple(_field(path, state, "band", list)), writer=False)  # type: ignore[arg-type]
        pool._fill(path, state, records=snapshot["tasks"])
        return pool

    def _fill(self, path: Path, state: dict[str, Any], records: dict[str, Any] | None = None, *,
              base: Path | None = None) -> None:
        """Populate from a parsed ``state.json`` and its task records; every error names the file.

        The records come from the task files the state names (under ``base / "tasks"``, ``base`` defaulting to the
        state's folder), or from ``records`` (task id -> record) when given.
        """
        base = path.parent if base is None else base
        try:
            self.generation = int(_field(path, state, "generation", int))
            for task_id, name in _field(path, state, "task_files", dict).items():
                task_path = base / "tasks" / str(name)
                try:
                    record = read_json(task_path, fix=_STATE_FIX) if records is None else records[task_id]
                    self.tasks[task_id] = TaskSpec.from_dict(record)
                except CorruptFileError:
                    raise
                except FileNotFoundError:
                    raise CorruptFileError(f"{task_path}: missing, but {path} names it as the file of task "
                                           f"{task_id!r}") from None
                except (KeyError, TypeError, ValueError) as err:
                    raise CorruptFileError(f"{task_path}: malformed task record ({err})") from None
                if self.tasks[task_id].task_id != task_id:
                    raise CorruptFileError(f"{task_path}: holds task {self.tasks[task_id].task_id!r}, but the state "
                                           f"names it as the file of {task_id!r}")
                self._saved_files.add(task_id)
            self.slots = {s["slot_id"]: Slot(**s) for s in _field(path, state, "slots", list)}
            self.pending = {p["task_id"]: PendingTask(p["slot_id"], Candidate.from_dict(p["candidate"]),
                                                      float(p["parent_acc"]), int(p["created_iteration"]))
                            for p in _field(path, state, "pending", list)}
            self.events = list(_field(path, state, "events", list))
        except (CorruptFileError, FileNotFoundError):
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CorruptFileError(f"{path}: malformed pool state ({type(err).__name__}: {err})") from None
        if "num_events" in state and state["num_events"] != len(self.events):
            raise ValueError(f"{path}: events: the state recorded {state['num_events']} events but holds "
                             f"{len(self.events)}; the history was truncated or edited")
        try:
            self.check()
        except ValueError as err:
            raise ValueError(f"{path}: inconsistent pool state: {err}") from None

    def close(self) -> None:
        """Release the writer lock (also released when the process exits)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def save(self) -> None:
        """Persist atomically: new task files first, then the state (see the module docstring)."""
        if not self.writer:
            raise RuntimeError("save: this pool was loaded with writer=False (only the writer rank may save)")
        self.check()
        base = self.run_dir / "pool"
        for task_id, task in self.tasks.items():
            if task_id not in self._saved_files:
                atomic_write_json(base / "tasks" / _file_name(task_id), task.to_dict())
                self._saved_files.add(task_id)
        self.generation += 1
        atomic_write_json(base / "state.json", self._state())

    def _state(self) -> dict[str, Any]:
        """What ``state.json`` holds for the current generation."""
        return {
            "state_version": STATE_VERSION, "generation": self.generation, "band": list(self.band),
            "task_files": {tid: _file_name(tid) for tid in self.tasks},
            "slots": [vars(s) for s in self.slots.values()],
            "pending": [{"task_id": tid, "slot_id": p.slot_id, "candidate": p.candidate.to_dict(),
                         "parent_acc": p.parent_acc, "created_iteration": p.created_iteration}
                        for tid, p in self.pending.items()],
            "events": self.events,
            "num_events": len(self.events),
        }

    def check(self) -> None:
        """Raise ``ValueError`` if the pool is inconsistent (dangling ids, two pendings in a slot, duplicates)."""
        for slot in self.slots.values():
            if slot.active_id not in self.tasks:
                raise ValueError(f"slots[{slot.slot_id!r}]: active task {slot.active_id!r} is unknown")
        per_slot = [p.slot_id for p in self.pending.values()]
        if len(per_slot) != len(set(per_slot)) or any(s not in self.slots for s in per_slot):
            raise ValueError(f"pending: expected at most one pending task per known slot, got {per_slot}")
        for n, event in enumerate(self.events):
            if not isinstance(event, dict) or event.get("type") not in _EVENT_TYPES:
                raise ValueError(f"events[{n}]: expected a dict with type in {sorted(_EVENT_TYPES)}, got {event!r}")
        accepted = [e["task_id"] for e in self.events if e["type"] == "accept"]
        if len(accepted) != len(set(accepted)):
            raise ValueError("events: a task was accepted twice")
        self._check_history()

    def _check_history(self) -> None:
        """The slots and pending tasks must be what the events say happened (no history silently dropped)."""
        last_accept: dict[str, str] = {}
        scheduled: set[str] = set()
        for event in self.events:
            if event["type"] == "accept":
                last_accept[str(event.get("slot_id"))] = str(event.get("task_id"))
            elif event["type"] == "candidate" and event.get("scheduled"):
                scheduled.add(str(event.get("task_id")))
            elif event["type"] == "reject":
                scheduled.discard(str(event.get("task_id")))
            if event["type"] == "accept":
                scheduled.discard(str(event.get("task_id")))
        for slot in self.slots.values():
            expected = last_accept.get(slot.slot_id, slot.slot_id)
            if slot.active_id != expected:
                raise ValueError(f"slots[{slot.slot_id!r}]: active task {slot.active_id!r} but the accept events "
                                 f"say {expected!r} (events missing or edited)")
            if slot.version != self.tasks[slot.active_id].version:
                raise ValueError(f"slots[{slot.slot_id!r}]: version {slot.version} but its active task has version "
                                 f"{self.tasks[slot.active_id].version}")
        unknown = sorted(set(self.pending) - scheduled)
        if unknown:
            raise ValueError(f"pending: {unknown[:3]} have no scheduling event in the history (events missing)")

    # ---------------------------------------------------------------------------------------------- iteration
    def active_tasks(self) -> list[TaskSpec]:
        """The active task of every slot, by slot id."""
        return [self.tasks[self.slots[s].active_id] for s in sorted(self.slots)]

    def sample(self, k: int, *, seed: int, iteration: int) -> list[TaskSpec]:
        """``k`` active tasks (all if fewer) drawn without replacement; the same ``(seed, iteration)`` -> same draw."""
        if k < 0:
            raise ValueError(f"k: expected >= 0, got {k}")
        ids = sorted(self.slots)
        rng = random.Random(f"{seed}:{iteration}")
        chosen = rng.sample(ids, min(k, len(ids)))
        return [self.tasks[self.slots[s].active_id] for s in chosen]

    def pending_tasks(self) -> list[TaskSpec]:
        """The pending candidates' tasks (to be rolled out this iteration)."""
        return [p.candidate.task for p in self.pending.values() if p.candidate.task is not None]

    def slot_of(self, task_id: str) -> str | None:
        """The slot whose active task is ``task_id``."""
        return next((s.slot_id for s in self.slots.values() if s.active_id == task_id), None)

    def requests(self, rates: dict[str, float]) -> list[tuple[TaskSpec, Direction, float]]:
        """``(active task, direction, acc)`` for every active task outside the band whose slot has no pending task."""
        critic = DifficultyCritic(band=self.band)
        busy = {p.slot_id for p in self.pending.values()}
        out: list[tuple[TaskSpec, Direction, float]] = []
        for task_id, acc in rates.items():
            slot = self.slot_of(task_id)
            if slot is None or slot in busy:
                continue
            direction = critic.direction(acc)
            if direction is not Direction.KEEP:
                out.append((self.tasks[task_id], direction, acc))
        return out

    def add_candidates(self, candidates: Sequence[Candidate], *, parent_acc: float, iteration: int) -> str | None:
        """Log every candidate; the first valid one becomes its slot's pending task. Returns its id or ``None``."""
        chosen: str | None = None
        for cand in candidates:
            slot = self.slot_of(cand.parent_id)
            busy = slot is not None and any(p.slot_id == slot for p in self.pending.values())
            take = cand.valid and cand.task is not None and slot is not None and not busy and chosen is None
            self.events.append({"type": "candidate", "iteration": iteration, "slot_id": slot, "rewriter": cand.rewriter,
                                "direction": cand.direction, "valid": cand.valid, "scheduled": take,
                                "reason": None if cand.reason is None else cand.reason.value,
                                "task_id": None if cand.task is None else cand.task.task_id})
            if take and cand.task is not None and slot is not None:
                if cand.task.task_id in self.tasks:
                    raise ValueError(f"candidates: task id {cand.task.task_id!r} is already in the pool")
                self.tasks[cand.task.task_id] = cand.task
                self.pending[cand.task.task_id] = PendingTask(slot, cand, float(parent_acc), iteration)
                chosen = cand.task.task_id
        return chosen

    def resolve(self, task_id: str, acc: float, *, iteration: int) -> Decision:
        """Apply the acceptance rule to a pending task with its fresh success rate ``acc``."""
        if task_id not in self.pending:
            raise ValueError(f"task_id: {task_id!r} is not pending")
        pend = self.pending[task_id]
        direction = Direction(pend.candidate.direction)
        accepted = accept_rewrite(direction, pend.parent_acc, acc, band=self.band)
        slot = self.slots[pend.slot_id]
        del self.pending[task_id]
        if accepted:
            slot.active_id, slot.version = task_id, self.tasks[task_id].version
        else:
            # a rejected candidate's task file stays on disk for audit, but the pool forgets it
            self.tasks.pop(task_id, None)
            self._saved_files.discard(task_id)
        self.events.append({"type": "accept" if accepted else "reject", "iteration": iteration, "task_id": task_id,
                            "slot_id": pend.slot_id, "direction": direction.value, "parent_acc": pend.parent_acc,
                            "acc": acc, "rewriter": pend.candidate.rewriter})
        return Decision(task_id, pend.slot_id, accepted, direction.value, pend.parent_acc, acc)

    def record_rates(self, rates: dict[str, float], *, iteration: int) -> None:
        """Log the success rate of each rolled-out task (for the difficulty-distribution metrics)."""
        for task_id, acc in sorted(rates.items()):
            self.events.append({"type": "rate", "iteration": iteration, "task_id": task_id, "acc": float(acc),
                                "slot_id": self.slot_of(task_id), "pending": task_id in self.pending})

    def accepted_ids(self) -> list[str]:
        """Task ids accepted so far, in order."""
        return [e["task_id"] for e in self.events if e["type"] == "accept"]
