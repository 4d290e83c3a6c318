"""Oracle labels stored by content hash (``loop/oracle_labels.StoredLabels``): read back, never stale.

On a counting oracle: keys, misses, versions, torn entries, forked children. The ALFWorld planner's own test is
``tests/envs/test_alfworld_stored_labels.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlanything_core.loop.oracle_labels import StoredLabels, label_within_deadline


class Counting:
    """An oracle that counts its calls: +1 for a command starting with "go"."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, task: str, actions: list[str]) -> list[int]:
        self.calls += 1
        return [1 if a.startswith("go") else -1 for a in actions]


def test_labels_are_stored_once_and_keyed_by_task_actions_and_version(tmp_path: Path) -> None:
    oracle = Counting()
    stored = StoredLabels(oracle, tmp_path, version="v1")
    assert stored("g1", ["go a", "look"]) == [1, -1] and oracle.calls == 1
    assert stored("g1", ["go a", "look"]) == [1, -1] and oracle.calls == 1  # read back
    assert (stored.hits, stored.misses) == (1, 1)
    stored("g1", ["go a"])  # other actions
    stored("g2", ["go a", "look"])  # another task
    assert oracle.calls == 3
    StoredLabels(oracle, tmp_path, version="v2")("g1", ["go a", "look"])  # another planner: never the old entry
    assert oracle.calls == 4
    assert StoredLabels(oracle, tmp_path, version="v1")("g1", ["go a", "look"]) == [1, -1] and oracle.calls == 4
    by_content = StoredLabels(oracle, tmp_path, version="v1", task_key=lambda task: "same content")
    by_content("copy-a", ["look"])
    by_content("copy-b", ["look"])  # tasks are their key: two paths of the same content share an entry
    assert oracle.calls == 5


def test_a_torn_or_foreign_entry_is_labelled_again_and_replaced(tmp_path: Path) -> None:
    oracle = Counting()
    stored = StoredLabels(oracle, tmp_path, version="v1")
    path = stored.path("g", ["go a", "b"])
    path.parent.mkdir(parents=True)
    for bad in ("[1, ", json.dumps([1]), json.dumps({"labels": [1, -1]}), json.dumps(["1", "-1"])):
        path.write_text(bad)
        assert stored("g", ["go a", "b"]) == [1, -1]
    assert oracle.calls == 4 and json.loads(path.read_text()) == [1, -1]
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]  # atomic writes leave nothing behind
    with pytest.raises(ValueError, match="version"):
        StoredLabels(oracle, tmp_path, version="")


def test_forked_children_of_the_deadline_labeller_store_what_they_label(tmp_path: Path) -> None:
    oracle = Counting()
    stored = StoredLabels(oracle, tmp_path, version="v1")
    items = {"a": ("a", [["go x", "y"]]), "b": ("b", [["z"]])}
    first = label_within_deadline(stored, items, deadline_s=60.0, workers=2)
    assert oracle.calls == 0  # the children labelled
    again = StoredLabels(Counting(), tmp_path, version="v1")
    assert label_within_deadline(again, items, deadline_s=None) == first == {"a": [[1, -1]], "b": [[-1]]}
    assert again.hits == 2 and again.misses == 0
