"""A slow oracle within a time limit (rlanything_core/loop/oracle_labels.py): slow items left out, failures raised."""

from __future__ import annotations

import time

import pytest

from rlanything_core.loop.oracle_labels import label_within_deadline


def _slow_on_b(game: str, actions: list[str]) -> list[int]:
    if game == "b":
        time.sleep(30)
    return [1 if a.startswith("go") else -1 for a in actions]


def _fails_on_c(game: str, actions: list[str]) -> list[int]:
    if game == "c":
        raise KeyError("no plan")
    return [1] * len(actions)


GAMES = {"a": ("a", [["go x", "y"], ["z"]]), "b": ("b", [["x"]]), "c": ("c", [[]])}


def test_an_item_past_its_deadline_is_left_out_not_guessed() -> None:
    started = time.monotonic()
    labels = label_within_deadline(_slow_on_b, GAMES, deadline_s=2.0, workers=2)
    assert labels == {"a": [[1, -1], [-1]], "c": [[]]}
    assert list(labels) == ["a", "c"]  # the items' order
    assert time.monotonic() - started < 20  # the slow item's process was killed at its deadline


def test_without_a_deadline_every_item_is_labelled_in_this_process() -> None:
    calls: list[str] = []

    def oracle(game: str, actions: list[str]) -> list[int]:
        calls.append(game)  # a forked child's appends would not reach this list
        return [1] * len(actions)

    fast = {k: v for k, v in GAMES.items() if k != "b"}
    assert label_within_deadline(oracle, fast, deadline_s=None) == {"a": [[1, 1], [1]], "c": [[]]}
    assert calls == ["a", "a", "c"]


def test_an_oracle_that_fails_is_an_error_not_a_slow_item() -> None:
    with pytest.raises(RuntimeError, match="failed on 'c'"):
        label_within_deadline(_fails_on_c, {"a": GAMES["a"], "c": ("c", [["x"]])}, deadline_s=10.0)
    with pytest.raises(KeyError):
        label_within_deadline(_fails_on_c, {"c": ("c", [["x"]])}, deadline_s=None)


@pytest.mark.parametrize("kwargs", [{"deadline_s": 0.0}, {"deadline_s": -1.0}, {"deadline_s": 5.0, "workers": 0}])
def test_bad_limits_are_refused_by_name(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="deadline_s|workers"):
        label_within_deadline(_slow_on_b, GAMES, **kwargs)
