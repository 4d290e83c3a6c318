"""Environment adaptation for desktop tasks: add a hint (easier) or remove it (harder), as in the paper's GUI setting.

The desktop counterpart of :mod:`.gui_hints` (MiniWoB++); the hints themselves ship with the tasks
(:mod:`rlanything_core.envs.desktop.variants`).

A desktop :class:`~rlanything_core.adaptation.rewriters.protocol.TaskSpec` carries ``data = {"task_json": path,
"instruction": str, "hint": str}``; a rewrite changes only ``instruction`` (the evaluator is the JSON's, untouched),
so every valid candidate is scored exactly like its parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec
from rlanything_core.envs.desktop.variants import HINT_PREFIX, strip_hint

__all__ = ["DesktopHintRewriter"]


@dataclass
class DesktopHintRewriter:
    """Rule rewriter: ``easier`` appends the task's hint, ``harder`` removes it."""

    name: str = "desktop_hints"

    def rewrite(self, task: TaskSpec, direction: Any, feedback: Any = None) -> list[Candidate]:
        """One candidate: valid, or rejected ``NO_CHANGE`` (hint already there / none to remove / no hint known)."""
        way = str(getattr(direction, "value", direction))
        if way not in ("easier", "harder"):
            raise ValueError(f"direction: expected 'easier' or 'harder', got {direction!r}")
        instruction = str(task.data.get("instruction", ""))
        hint = str(task.data.get("hint", "")).strip()
        base = strip_hint(instruction)
        new = f"{base}{HINT_PREFIX}{hint}" if way == "easier" else base
        common: dict[str, Any] = {
            "parent_id": task.task_id,
            "root_id": task.root_id,
            "direction": way,
            "rewriter": self.name,
        }
        if (way == "easier" and not hint) or new == instruction:
            detail = "no hint known for this task" if not hint else "the instruction would not change"
            return [Candidate(task=None, valid=False, reason=RejectReason.NO_CHANGE, detail=detail, **common)]
        version = task.version + 1
        spec = TaskSpec(
            task_id=f"{task.root_id}@v{version}-{'hint' if way == 'easier' else 'nohint'}",
            kind=task.kind,
            root_id=task.root_id,
            version=version,
            data={**task.data, "instruction": new},
        )
        return [Candidate(task=spec, valid=True, detail=f"hint {'added' if way == 'easier' else 'removed'}", **common)]
