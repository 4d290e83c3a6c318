from __future__ import annotations

import pytest

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskSpec
from rlanything_core.adaptation.rewriters.textworld import TextWorldParams, TextWorldRewriter, step_params


def test_step_params_bounds() -> None:
    p = TextWorldParams(nb_rooms=1, nb_objects=1, quest_length=1)
    assert step_params(p, "easier", "quest_length") is None
    assert step_params(p, "harder", "quest_length") == TextWorldParams(1, 1, 2)
    with pytest.raises(ValueError, match="quest_length"):
        TextWorldParams(quest_length=0)
    with pytest.raises(ValueError, match="axis"):
        step_params(p, "harder", "level")


def test_rewriter_without_generation() -> None:
    task = TaskSpec("tw", "textworld", "tw", data={"nb_rooms": 1, "nb_objects": 1, "quest_length": 1})
    cands = TextWorldRewriter(check_generates=False).rewrite(task, Direction.EASIER, None)
    assert [c.reason for c in cands] == [RejectReason.OUT_OF_RANGE] * 3
    (up,) = TextWorldRewriter(check_generates=False).rewrite(task, Direction.HARDER, None)
    assert up.valid and up.task is not None and up.task.data["quest_length"] == 2 and up.task.version == 1
    bad = TaskSpec("tw", "textworld", "tw", data={"nb_rooms": "three"})
    assert TextWorldRewriter().rewrite(bad, Direction.HARDER, None)[0].reason is RejectReason.WRONG_TYPES


@pytest.mark.slow
def test_rewriter_generates_real_games() -> None:
    pytest.importorskip("textworld")
    task = TaskSpec("tw", "textworld", "tw", data={"nb_rooms": 2, "nb_objects": 3, "quest_length": 2, "seed": 1})
    (cand,) = TextWorldRewriter().rewrite(task, Direction.HARDER, None)
    assert cand.valid and cand.info["walkthrough_len"] >= 3
