"""The desktop hint rewriter: adds the task's hint (easier) or removes it (harder); a no-op rewrite is refused."""

from __future__ import annotations

import pytest

from rlanything_core.adaptation.rewriters.desktop_hints import DesktopHintRewriter
from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskSpec
from rlanything_core.envs.desktop.variants import load_hints, shipped_tasks


def test_hint_rewriter_adds_and_removes() -> None:
    task = shipped_tasks()[0]
    hint = load_hints()[task.task_id]
    spec = TaskSpec(task.task_id, "desktop", task.task_id, 0, {"task_json": "x", "instruction": task.instruction,
                                                               "hint": hint})
    rewriter = DesktopHintRewriter()
    easier = rewriter.rewrite(spec, "easier")[0]
    assert easier.valid and easier.task is not None and hint in easier.task.data["instruction"]
    assert easier.task.version == 1 and easier.task.task_id.endswith("-hint")
    again = rewriter.rewrite(easier.task, "easier")[0]
    assert not again.valid and again.reason is RejectReason.NO_CHANGE
    harder = rewriter.rewrite(easier.task, "harder")[0]
    assert harder.valid and harder.task is not None and harder.task.data["instruction"] == task.instruction
    nothing = rewriter.rewrite(spec, "harder")[0]
    assert nothing.reason is RejectReason.NO_CHANGE
    no_hint = TaskSpec("t", "desktop", "t", 0, {"instruction": "do", "hint": ""})
    assert rewriter.rewrite(no_hint, "easier")[0].reason is RejectReason.NO_CHANGE
    with pytest.raises(ValueError, match="direction"):
        rewriter.rewrite(spec, "sideways")
