r"""LLM ALFWorld rewriter: the paper's goal rewrite proposed by a language model (as Open-AgentRL's rollout stage).

The prompt holds an English summary of the game's facts (object types with instance counts, receptacle types,
what each receptacle can contain, which types can be cleaned/heated/cooled/toggled), the critic's failure
summaries, the direction and the previous success rate, and asks for two tokens in ``\\boxed{TOKEN_A,TOKEN_B}``.
Unlike the authors' code, every parsed proposal is checked against the facts (``check_goal``), must change the
goal, and must compile and be solved by the planner before it is returned valid.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rlanything_core.adaptation.feedback import last_boxed, render_feedback
from rlanything_core.adaptation.rewriters.alfworld_goal import (
    AlfTaskType,
    GameFacts,
    GoalSpec,
    check_goal,
    goal_text,
    parse_facts,
    parse_goal,
    type_hardness,
)
from rlanything_core.adaptation.rewriters.alfworld_rules import EngineVerifier, GameVerifier, load_game, materialize
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec, _rejected

if TYPE_CHECKING:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.feedback import TaskFeedback
    from rlanything_core.adaptation.llm import ChatModel

__all__ = ["AlfworldLLMRewriter", "facts_summary", "parse_two_tokens", "resolve_goal", "rewrite_chat"]

_SPLIT_RE = re.compile(r"[,\uff0c\u3001;]")


def facts_summary(facts: GameFacts) -> str:
    """English summary of a game's ``:init`` facts by type (what the rewrite prompt shows)."""
    objs = ", ".join(f"{t} x{len(v)}" for t, v in sorted(facts.obj_instances.items())
                     if facts.has("pickupable", t) or facts.has("toggleable", t))
    recs = ", ".join(f"{t} x{len(v)}" for t, v in sorted(facts.rec_instances.items()))
    lines = [f"Object types in the room (count): {objs}", f"Receptacle types (count): {recs}",
             "What each receptacle type can contain:"]
    by_rec: dict[str, list[str]] = {}
    for rec, obj in sorted(facts.can_contain):
        if obj in facts.obj_instances:
            by_rec.setdefault(rec, []).append(obj)
    lines.extend(f"- {rec}: {', '.join(objs_)}" for rec, objs_ in by_rec.items() if rec in facts.rec_instances)
    for pred in ("cleanable", "heatable", "coolable", "toggleable"):
        lines.append(f"{pred.capitalize()} types: {', '.join(sorted(facts.unary.get(pred, set()))) or 'none'}")
    return "\n".join(lines)


_BRIEF = {
    AlfTaskType.LOOK_AT_OBJ_IN_LIGHT: "TOKEN_A = the object to look at (pickupable), TOKEN_B = a toggleable lamp type.",
    AlfTaskType.PICK_TWO_OBJ_AND_PLACE: "TOKEN_A = the object type (at least 2 instances), TOKEN_B = a receptacle "
                                        "type with canContain(TOKEN_B, TOKEN_A).",
    AlfTaskType.PICK_CLEAN_THEN_PLACE: "TOKEN_A = a cleanable object type, TOKEN_B = a receptacle type with "
                                       "canContain(TOKEN_B, TOKEN_A).",
    AlfTaskType.PICK_HEAT_THEN_PLACE: "TOKEN_A = a heatable object type, TOKEN_B = a receptacle type with "
                                      "canContain(TOKEN_B, TOKEN_A).",
    AlfTaskType.PICK_COOL_THEN_PLACE: "TOKEN_A = a coolable object type, TOKEN_B = a receptacle type with "
                                      "canContain(TOKEN_B, TOKEN_A).",
    AlfTaskType.PICK_AND_PLACE_SIMPLE: "TOKEN_A = an object type, TOKEN_B = a receptacle type with "
                                       "canContain(TOKEN_B, TOKEN_A).",
}


def rewrite_chat(facts: GameFacts, goal: GoalSpec, direction: str, feedback: TaskFeedback | None, *, attempt: int,
                 attempts: int) -> list[dict[str, str]]:
    """The rewrite prompt (the authors' semantics; one chat per attempt, marked ``(Attempt a/N)``)."""
    rule = ("prefer rarer types that need more search" if direction == "harder"
            else "prefer more common types that are easier to find")
    user = "\n".join([
        "You adapt the difficulty of a household task in a text game.", "### Room facts", facts_summary(facts),
        "### Current task", f"Type: {goal.task_type.value}; goal: {goal_text(goal)} (tokens {goal.obj}, {goal.target})",
        render_feedback(feedback),
        f"### Request\nPropose a new goal that makes the task {direction.upper()} ({rule}). "
        f"prev_acc is {feedback.success_rate if feedback else float('nan'):.2f}. "
        "The task framework cannot change; you may only modify two tokens.", _BRIEF[goal.task_type],
        "Use only type names listed above. Answer with \\boxed{TOKEN_A,TOKEN_B}, e.g. \\boxed{"
        f"{goal.obj},{goal.target}}} (that one is the current goal and is not allowed).",
        f"(Attempt {attempt}/{attempts})",
    ])
    return [{"role": "user", "content": user}]


def parse_two_tokens(text: str) -> list[str] | None:
    r"""The two comma-separated tokens of the last ``\\boxed{}`` (tolerant of brackets, quotes, CJK commas).

    Examples:
        >>> parse_two_tokens(r"so \\boxed{['Mug', 'DeskType']}")
        ['Mug', 'DeskType']
        >>> parse_two_tokens(r"\\boxed{Mug}") is None
        True
    """
    inner = last_boxed(text)
    if inner is None:
        return None
    inner = inner.strip()
    items: list[str] | None = None
    if inner[:1] in "[(":
        try:
            value = ast.literal_eval(inner)
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                items = [str(v) for v in value]
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            items = None
    if items is None:
        items = [p.strip().strip("[]()'\"` \t\n") for p in _SPLIT_RE.split(inner.strip("[]() "))]
    items = [i for i in items if i]
    return items if len(items) == 2 else None


def _canon(token: str, facts: GameFacts) -> str | None:
    key = re.sub(r"[^a-z0-9]", "", token.lower())
    key = key[: -len("type")] if key.endswith("type") else key
    for name in (*facts.obj_instances, *facts.rec_instances):
        if name.lower().removesuffix("type") == key:
            return name
    return None


def resolve_goal(tokens: list[str], facts: GameFacts, current: GoalSpec) -> tuple[GoalSpec | None, RejectReason | None,
                                                                                   str]:
    """Turn two raw tokens into a goal: canonical type names, order fixed as the authors' ``decide_new_types``."""
    canon = [_canon(t, facts) for t in tokens]
    if any(c is None for c in canon):
        return None, RejectReason.UNKNOWN_TYPE, f"unknown type(s) in {tokens}"
    a, b = str(canon[0]), str(canon[1])
    first = GoalSpec(current.task_type, a, b)
    if current.task_type is not AlfTaskType.LOOK_AT_OBJ_IN_LIGHT and check_goal(facts, current, first)[0] is not None:
        swapped = GoalSpec(current.task_type, b, a)
        if check_goal(facts, current, swapped)[0] is None:
            return swapped, None, ""
    return first, None, ""


@dataclass
class AlfworldLLMRewriter:
    """Ask ``chat_model`` for ``attempts`` proposals; return each one validated (facts, compile, planner).

    Args:
        chat_model: the environment LLM.
        out_dir: run directory for candidate games.
        attempts: proposals per request (the authors used 8).
        seed: base sampling seed (request ``r`` of this object uses ``seed + r``).
        verifier: engine checks; ``EngineVerifier()`` by default.
    """

    chat_model: ChatModel
    out_dir: Path
    attempts: int = 4
    seed: int = 0
    verifier: GameVerifier | None = None
    name: str = "alfworld_llm"

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts: expected >= 1, got {self.attempts}")
        self.out_dir = Path(self.out_dir)
        self._requests = 0

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Return one candidate per attempt (valid, or rejected with the reason and the raw output)."""
        d = direction.value
        try:
            _, problem = load_game(task)
            facts, current = parse_facts(problem), parse_goal(problem)
        except (ValueError, KeyError) as err:
            return [_rejected(None, task, d, self.name, RejectReason.UNSUPPORTED_TASK, str(err))]
        chats = [rewrite_chat(facts, current, d, feedback, attempt=a + 1, attempts=self.attempts)
                 for a in range(self.attempts)]
        replies = self.chat_model.complete(chats, seed=self.seed + self._requests)
        self._requests += 1
        out: list[Candidate] = []
        seen: set[tuple[str, str]] = set()
        for chat, raw in zip(chats, replies):
            prompt = chat[-1]["content"]
            extra = {"prompt": prompt, "raw_output": raw}
            tokens = parse_two_tokens(raw)
            if tokens is None:
                out.append(_rejected(None, task, d, self.name, RejectReason.UNPARSEABLE,
                                     "no \\boxed{A,B} with two tokens", **extra))
                continue
            goal, reason, detail = resolve_goal(tokens, facts, current)
            if goal is None or reason is not None:
                out.append(_rejected(None, task, d, self.name, reason or RejectReason.UNKNOWN_TYPE, detail, **extra))
                continue
            reason, detail = check_goal(facts, current, goal)
            if reason is None and (goal.obj, goal.target) in seen:
                reason, detail = RejectReason.DUPLICATE, "an earlier attempt proposed this goal"
            if reason is not None:
                out.append(_rejected(None, task, d, self.name, reason, detail, **extra,
                                     info={"new_tokens": [goal.obj, goal.target]}))
                continue
            seen.add((goal.obj, goal.target))
            cand = materialize(task, goal, direction=d, rewriter=self.name, out_dir=self.out_dir,
                               verifier=self.verifier or EngineVerifier(), hardness=type_hardness(facts, goal),
                               old_hardness=type_hardness(facts, current))
            cand.info["old_tokens"] = [current.obj, current.target]
            cand.prompt, cand.raw_output = prompt, raw
            out.append(cand)
        return out
