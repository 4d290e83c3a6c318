"""Damaged or inconsistent pool files: every failure names the file and what is wrong; nothing is silently lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskSpec
from rlanything_core.files import CorruptFileError


def _roots(n: int = 3) -> list[TaskSpec]:
    return [TaskSpec(task_id=f"r{i}", kind="dummy", root_id=f"r{i}", data={"i": i}) for i in range(n)]


def _pool_with_history(run_dir: Path) -> TaskPool:
    """A saved pool where slot r0 accepted a rewrite and slot r1 has a pending one (then closed)."""
    pool = TaskPool.create(run_dir, _roots())
    for slot, tag in (("r0", "a"), ("r1", "b")):
        parent = pool.tasks[slot]
        task = TaskSpec(f"{slot}@v1-{tag}", "dummy", slot, 1)
        pool.add_candidates([Candidate(task, slot, slot, "harder", "test", valid=True)], parent_acc=1.0, iteration=0)
    pool.resolve("r0@v1-a", 0.5, iteration=1)
    pool.record_rates({"r0@v1-a": 0.5, "r2": 0.5}, iteration=1)
    pool.save()
    pool.close()
    del parent
    return pool


def _state(run_dir: Path) -> Path:
    return run_dir / "pool" / "state.json"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "empty"),
        (b"  \n", "empty"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"{\"state_version\": 1, \"generation\": 3, \"ban", "not valid JSON"),
        (b"[1, 2, 3]", "expected a JSON dict"),
    ],
)
def test_damaged_state_file_is_named(tmp_path: Path, payload: bytes, problem: str) -> None:
    _pool_with_history(tmp_path)
    _state(tmp_path).write_bytes(payload)
    with pytest.raises(ValueError, match=problem) as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(_state(tmp_path)) in str(info.value)


def test_truncated_state_file_is_named(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    raw = _state(tmp_path).read_bytes()
    _state(tmp_path).write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated") as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(_state(tmp_path)) in str(info.value)


@pytest.mark.parametrize("key", ["slots", "events", "task_files", "band", "generation", "pending"])
def test_missing_key_is_named(tmp_path: Path, key: str) -> None:
    _pool_with_history(tmp_path)
    state = json.loads(_state(tmp_path).read_text())
    del state[key]
    _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(ValueError, match=f"{key!r}") as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(_state(tmp_path)) in str(info.value)


def test_malformed_slot_is_named(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    state = json.loads(_state(tmp_path).read_text())
    del state["slots"][0]["active_id"]
    _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(ValueError, match="malformed pool state") as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(_state(tmp_path)) in str(info.value)


@pytest.mark.parametrize("payload", [b"", b"{\"task_id\": \"r0\", \"ki", b"\x80\x81", b"{\"kind\": \"dummy\"}"])
def test_damaged_task_file_is_named(tmp_path: Path, payload: bytes) -> None:
    _pool_with_history(tmp_path)
    name = json.loads(_state(tmp_path).read_text())["task_files"]["r2"]
    task_file = tmp_path / "pool" / "tasks" / name
    task_file.write_bytes(payload)
    with pytest.raises(ValueError) as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(task_file) in str(info.value)


def test_emptied_events_are_refused_not_dropped(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    state = json.loads(_state(tmp_path).read_text())
    state["events"] = []
    state.pop("num_events")  # even without the recorded count, the slots contradict an empty history
    _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(ValueError, match="accept events") as info:
        TaskPool.load(tmp_path, writer=False)
    assert str(_state(tmp_path)) in str(info.value)


def test_truncated_history_is_refused(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    state = json.loads(_state(tmp_path).read_text())
    state["events"] = [e for e in state["events"] if e["type"] != "rate"]  # slots still agree; the count does not
    _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(ValueError, match="truncated or edited"):
        TaskPool.load(tmp_path, writer=False)


def test_pending_without_its_event_is_refused(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    state = json.loads(_state(tmp_path).read_text())
    state["events"] = [e for e in state["events"] if e.get("task_id") != "r1@v1-b"]
    state["num_events"] = len(state["events"])
    _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(ValueError, match="scheduling event"):
        TaskPool.load(tmp_path, writer=False)


def test_a_failed_load_releases_the_writer_lock(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    good = _state(tmp_path).read_bytes()
    state = json.loads(good)
    state["events"] = []
    for broken in (b"{\"state_version\": 1, \"band\": [0.2, 0.8]}", json.dumps(state).encode()):
        _state(tmp_path).write_bytes(broken)
        with pytest.raises(ValueError):
            TaskPool.load(tmp_path)  # writer=True: takes the lock, fails after it
    _state(tmp_path).write_bytes(good)
    pool = TaskPool.load(tmp_path)  # the retry in this same process gets the lock
    assert pool.accepted_ids() == ["r0@v1-a"] and set(pool.pending) == {"r1@v1-b"}
    pool.close()


def test_create_refuses_an_existing_pool(tmp_path: Path) -> None:
    _pool_with_history(tmp_path)
    before = _state(tmp_path).read_bytes()
    with pytest.raises(FileExistsError, match="already holds a task pool"):
        TaskPool.create(tmp_path, _roots())
    assert _state(tmp_path).read_bytes() == before
    pool = TaskPool.load(tmp_path)  # and it left no lock behind
    assert pool.accepted_ids() == ["r0@v1-a"]
    pool.close()


def test_a_saved_history_round_trips(tmp_path: Path) -> None:
    saved = _pool_with_history(tmp_path)
    loaded = TaskPool.load(tmp_path, writer=False)
    assert loaded.events == saved.events and loaded.slots == saved.slots and set(loaded.pending) == {"r1@v1-b"}


class _Driver:
    """The pool side of a loop driver (``PoolSnapshots``) around one pool: what a resume runs."""

    def __new__(cls, pool: TaskPool):  # type: ignore[no-untyped-def]
        from rlanything_core.loop.pool_sync import PoolSnapshots

        driver = PoolSnapshots()
        driver.pool = pool
        return driver


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda raw: raw[: len(raw) // 2], "not valid JSON"),
        (lambda raw: b"", "empty"),
        (lambda raw: raw.replace(b'"state_version": 1', b'"state_version": 7'), "unsupported pool state version"),
        (lambda raw: raw.replace(b'"r0@v1-a": "', b'"r0@v1-a": "missing-'), "missing-r0"),  # a task file it names
        (lambda raw: raw.replace(b'"type": "accept"', b'"type": "acept"'), "inconsistent pool state"),
    ],
)
def test_corrupt_snapshot_never_replaces_a_good_state(tmp_path: Path, damage, problem: str) -> None:  # type: ignore[no-untyped-def]
    """Old behaviour: the snapshot was copied over ``state.json`` first, then the load failed on it: the good state
    was lost (the error named the snapshot's copy, state.json)."""
    _pool_with_history(tmp_path)
    good = _state(tmp_path).read_bytes()
    snapshot = tmp_path / "pool" / "snapshots" / "iter_000000.json"
    snapshot.parent.mkdir()
    snapshot.write_bytes(damage(good))
    driver = _Driver(TaskPool.load(tmp_path))
    with pytest.raises(ValueError, match=problem) as info:
        driver.restore_pool(1)
    message = str(info.value)
    assert str(snapshot) in message and "state.json was left as it was" in message and "\n" not in message
    assert _state(tmp_path).read_bytes() == good
    driver.pool.close()
    assert TaskPool.load(tmp_path, writer=False).accepted_ids() == ["r0@v1-a"]


def test_intact_snapshot_is_restored(tmp_path: Path) -> None:
    pool = _pool_with_history(tmp_path)
    snapshot = tmp_path / "pool" / "snapshots" / "iter_000000.json"
    snapshot.parent.mkdir()
    snapshot.write_bytes(_state(tmp_path).read_bytes())
    pool = TaskPool.load(tmp_path)
    pool.resolve("r1@v1-b", 0.1, iteration=2)
    pool.save()
    driver = _Driver(pool)
    driver.restore_pool(1)
    assert [t.task_id for t in driver.pool.pending_tasks()] == ["r1@v1-b"]  # back to the snapshot's state
    assert _state(tmp_path).read_bytes() == snapshot.read_bytes()
    with pytest.raises(RuntimeError, match="writer=False"):
        TaskPool.load(tmp_path, writer=False).restore(snapshot)
    driver.pool.close()


@pytest.mark.parametrize(
    "damage",
    ["truncate", "missing_key", "inconsistent", "missing_task_file"],
)
def test_every_damaged_state_says_what_to_do_in_one_line(tmp_path: Path, damage: str) -> None:
    """Old behaviour: the messages named the file and the fault but not what to do; a missing task file was a bare
    ``FileNotFoundError``."""
    _pool_with_history(tmp_path)
    raw = _state(tmp_path).read_bytes()
    state = json.loads(raw)
    if damage == "truncate":
        _state(tmp_path).write_bytes(raw[:100])
    elif damage == "missing_key":
        del state["slots"]
    elif damage == "inconsistent":
        state["events"] = []
    else:
        (tmp_path / "pool" / "tasks" / state["task_files"]["r2"]).unlink()
    if damage != "truncate":
        _state(tmp_path).write_text(json.dumps(state))
    with pytest.raises(CorruptFileError) as info:
        TaskPool.load(tmp_path, writer=False)
    message = str(info.value)
    assert "pool/" in message and "resume from a checkpoint whose pool snapshot" in message and "\n" not in message


def test_a_missing_snapshot_is_named_with_what_to_do(tmp_path: Path) -> None:
    """Old behaviour: a bare ``FileNotFoundError`` without a way out."""
    _pool_with_history(tmp_path)
    driver = _Driver(TaskPool.load(tmp_path))
    with pytest.raises(CorruptFileError, match=r"iter_000004.json: the pool snapshot .* is missing; restore it"):
        driver.restore_pool(5)
    driver.pool.close()
