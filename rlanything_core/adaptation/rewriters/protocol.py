"""The task-rewriter protocol: a task, a direction and critic feedback in; validated candidates out.

Every rewriter (ALFWorld goal swaps by an LLM or by rules, coding problems by an LLM, TextWorld parameters) returns
``Candidate`` records. A candidate is either ``valid`` (it passed every check the rewriter knows: for ALFWorld it
compiles in the engine and the planner solves it) or carries a ``RejectReason`` from a closed set. Bad model output
is data: a rewriter never raises on it, it returns a rejected candidate with the reason and the raw text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.feedback import TaskFeedback

__all__ = ["Candidate", "RejectReason", "TaskRewriter", "TaskSpec"]


class RejectReason(str, Enum):
    """Why a candidate rewrite was not scheduled (the values are the strings written to JSON and metrics)."""

    UNPARSEABLE = "unparseable"
    """The model output held no parseable answer (no ``\\boxed{}``, no JSON object, wrong arity)."""
    WRONG_TYPES = "wrong_types"
    """The parsed answer had fields of the wrong type (a number where a list of strings was expected, ...)."""
    UNKNOWN_TYPE = "unknown_type"
    """A named object or receptacle type does not exist in this game."""
    UNSUPPORTED_TASK = "unsupported_task"
    """The task's goal has a shape the rewriter does not handle."""
    NO_CHANGE = "no_change"
    """The rewrite leaves the goal (or problem) as it was."""
    CONSTRAINT_VIOLATED = "constraint_violated"
    """A fact the goal needs is missing: canContain, cleanable/heatable/coolable, a toggleable light, instances."""
    TOO_FEW_TESTS = "too_few_tests"
    """Fewer tests than required, or test lists of unequal length."""
    TOO_LARGE = "too_large"
    """A field exceeds its size limit."""
    TESTS_INCONSISTENT = "tests_inconsistent"
    """The candidate's own (or a reference) solution fails its tests in the sandbox."""
    NO_SOLUTION = "no_solution"
    """No program to check the tests against (neither a reference nor one in the candidate)."""
    COMPILE_FAILED = "compile_failed"
    """The game file does not load in the engine."""
    UNSOLVABLE = "unsolvable"
    """The planner finds no plan for the new goal."""
    OUT_OF_RANGE = "out_of_range"
    """A parametric rewrite would leave the allowed range (TextWorld level/size limits)."""
    DUPLICATE = "duplicate"
    """Another candidate of the same request already proposes this task."""
    VERIFIER_CHANGED = "verifier_changed"
    """The rewrite would change how success is checked (GUI: another page, seed or checker)."""
    EMPTY_INSTRUCTION = "empty_instruction"
    """The rewrite leaves an empty instruction or an empty hint."""


@dataclass
class TaskSpec:
    """A task, as the pool stores it: JSON-ready and versioned.

    Attributes:
        task_id: unique id (``<root>@v<version>`` for rewritten tasks).
        kind: the environment family (``"alfworld"``, ``"coding"``, ``"textworld"``).
        root_id: id of the root (version 0) task this one descends from.
        version: 0 for a dataset task, parent version + 1 for a rewrite.
        data: the environment-specific payload (``{"game_file": ...}``, ``{"question": ..., "test_input": ...}``).
    """

    task_id: str
    kind: str
    root_id: str
    version: int = 0
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"task_id": self.task_id, "kind": self.kind, "root_id": self.root_id, "version": self.version,
                "data": self.data}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TaskSpec:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the missing key."""
        for key in ("task_id", "kind", "root_id"):
            if not isinstance(raw.get(key), str):
                raise ValueError(f"raw[{key!r}]: expected a string, got {raw.get(key)!r}")
        version = raw.get("version", 0)
        if not isinstance(version, int) or version < 0:
            raise ValueError(f"raw['version']: expected an integer >= 0, got {version!r}")
        data = raw.get("data", {})
        if not isinstance(data, dict):
            raise ValueError(f"raw['data']: expected a dict, got {type(data).__name__}")
        return cls(task_id=raw["task_id"], kind=raw["kind"], root_id=raw["root_id"], version=version, data=data)


@dataclass
class Candidate:
    """One proposed rewrite of a task, with its provenance and its validation result.

    Attributes:
        task: the new task (``None`` when nothing could be built from the output).
        parent_id: id of the task that was rewritten.
        root_id: id of the root task.
        direction: ``"harder"`` / ``"easier"`` (the ``Direction`` value the request carried).
        rewriter: name of the rewriter that made it.
        valid: ``True`` iff every check passed.
        reason: why it was rejected (``None`` when valid).
        detail: a short human-readable explanation of the verdict.
        prompt: the prompt sent to the LLM (empty for rule-based rewriters).
        raw_output: the LLM's raw text (empty for rule-based rewriters).
        info: rewriter-specific extras (the swapped tokens, a rarity score, the plan length, ...).
    """

    task: TaskSpec | None
    parent_id: str
    root_id: str
    direction: str
    rewriter: str
    valid: bool = False
    reason: RejectReason | None = None
    detail: str = ""
    prompt: str = ""
    raw_output: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.valid == (self.reason is not None):
            raise ValueError(f"reason: a valid candidate has no reason and a rejected one has one, got "
                             f"valid={self.valid}, reason={self.reason!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "task": None if self.task is None else self.task.to_dict(), "parent_id": self.parent_id,
            "root_id": self.root_id, "direction": self.direction, "rewriter": self.rewriter, "valid": self.valid,
            "reason": None if self.reason is None else self.reason.value, "detail": self.detail,
            "prompt": self.prompt, "raw_output": self.raw_output, "info": self.info,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Candidate:
        """Inverse of ``to_dict``."""
        task = raw.get("task")
        reason = raw.get("reason")
        return cls(
            task=None if task is None else TaskSpec.from_dict(task), parent_id=str(raw["parent_id"]),
            root_id=str(raw["root_id"]), direction=str(raw["direction"]), rewriter=str(raw["rewriter"]),
            valid=bool(raw["valid"]), reason=None if reason is None else RejectReason(reason),
            detail=str(raw.get("detail", "")), prompt=str(raw.get("prompt", "")),
            raw_output=str(raw.get("raw_output", "")), info=dict(raw.get("info", {})),
        )


@runtime_checkable
class TaskRewriter(Protocol):
    """Proposes rewrites of a task toward a difficulty direction.

    Implementations validate every candidate before returning it; callers schedule only ``valid`` ones and keep the
    rejected ones for the metrics (``RejectReason`` counts).
    """

    name: str

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Return candidates (valid or rejected with a reason); never raises on bad model output."""
        ...


def _rejected(task: TaskSpec | None, parent: TaskSpec, direction: str, rewriter: str, reason: RejectReason,
              detail: str = "", **extra: Any) -> Candidate:
    """Build a rejected candidate (internal helper shared by the rewriters)."""
    return Candidate(task=task, parent_id=parent.task_id, root_id=parent.root_id, direction=direction,
                     rewriter=rewriter, valid=False, reason=reason, detail=detail, **extra)
