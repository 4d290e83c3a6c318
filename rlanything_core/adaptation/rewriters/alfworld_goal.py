"""ALFWorld goals as data: parse a game's PDDL facts and goal, swap its two type tokens, validate, write the game.

The paper rewrites an ALFWorld task by changing the object and receptacle (or lamp) types of its PDDL goal
(arXiv 2602.02488, Open-AgentRL sample/alfworld_rl_rollout.py). The authors only printed warnings on constraint
violations and never checked solvability (a weak point of Open-AgentRL); here every new goal is checked against
the game's own ``:init`` facts (``check_goal``), then compiled and planned by the engine
(``rewriters.alfworld_rules.verify_in_engine``).

Goal slots: ``obj`` is the type the agent must manipulate; ``target`` is the receptacle type to place it in, or
the lamp type for ``look_at_obj_in_light``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from rlanything_core.adaptation.rewriters.protocol import RejectReason
from rlanything_core.files import atomic_write_json

__all__ = [
    "AlfTaskType",
    "GameFacts",
    "GoalSpec",
    "check_goal",
    "goal_text",
    "parse_facts",
    "parse_goal",
    "rewrite_problem",
    "type_hardness",
    "write_game",
]

_INIT_RE = re.compile(r"\(:init(.*?)\(:goal", re.S)
_FACT_RE = re.compile(r"\((\w+)((?:\s+[\w\-]+)+)\)")
_GOAL_RE = re.compile(r"\(:goal.*", re.S)
_OBJTYPE_RE = re.compile(r"\(objectType\s+(\?\w+)\s+(\w+)\)")
_RECTYPE_RE = re.compile(r"\(receptacleType\s+(\?\w+)\s+(\w+)\)")
_TASK_RE = re.compile(r'("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*")Your task is to: [^"]*(")')
_LOC_RE = re.compile(r"loc_bar_(_?minus_)?(\d+)_bar_(_?minus_)?(\d+)")


class AlfTaskType(str, Enum):
    """ALFWorld task types whose goal has one object slot and one target slot (ALFWorld ids 1-6 minus movable)."""

    PICK_AND_PLACE_SIMPLE = "pick_and_place_simple"
    LOOK_AT_OBJ_IN_LIGHT = "look_at_obj_in_light"
    PICK_CLEAN_THEN_PLACE = "pick_clean_then_place_in_recep"
    PICK_HEAT_THEN_PLACE = "pick_heat_then_place_in_recep"
    PICK_COOL_THEN_PLACE = "pick_cool_then_place_in_recep"
    PICK_TWO_OBJ_AND_PLACE = "pick_two_obj_and_place"


_TEMPLATES = {
    AlfTaskType.PICK_AND_PLACE_SIMPLE: "put some {o} on {t}.",
    AlfTaskType.LOOK_AT_OBJ_IN_LIGHT: "look at {o} under the {t}.",
    AlfTaskType.PICK_CLEAN_THEN_PLACE: "clean some {o} and put it in {t}.",
    AlfTaskType.PICK_HEAT_THEN_PLACE: "heat some {o} and put it in {t}.",
    AlfTaskType.PICK_COOL_THEN_PLACE: "cool some {o} and put it in {t}.",
    AlfTaskType.PICK_TWO_OBJ_AND_PLACE: "find two {o} and put them in {t}.",
}
# The appliance each state change needs (ALFWorld's domain: clean at a basin, heat in a microwave, cool in a fridge).
_APPLIANCE = {
    AlfTaskType.PICK_CLEAN_THEN_PLACE: ("cleanable", ("SinkBasinType", "BathtubBasinType")),
    AlfTaskType.PICK_HEAT_THEN_PLACE: ("heatable", ("MicrowaveType",)),
    AlfTaskType.PICK_COOL_THEN_PLACE: ("coolable", ("FridgeType",)),
}


@dataclass
class GameFacts:
    """What a game's ``:init`` block says, by type.

    Attributes:
        obj_instances: object type -> instance names.
        rec_instances: receptacle type -> instance names.
        can_contain: ``(receptacle type, object type)`` pairs.
        unary: predicate (``pickupable``, ``cleanable``, ``heatable``, ``coolable``, ``toggleable``, ``openable``) ->
            set of types having at least one instance with it.
        in_receptacle: object instance -> receptacle instance it starts in.
        location: instance (object or receptacle) -> ``(x, z)`` grid position.
        agent_location: the agent's start ``(x, z)``.
        openable_instances: receptacle instances that must be opened.
    """

    obj_instances: dict[str, list[str]] = field(default_factory=dict)
    rec_instances: dict[str, list[str]] = field(default_factory=dict)
    can_contain: set[tuple[str, str]] = field(default_factory=set)
    unary: dict[str, set[str]] = field(default_factory=dict)
    in_receptacle: dict[str, str] = field(default_factory=dict)
    location: dict[str, tuple[int, int]] = field(default_factory=dict)
    agent_location: tuple[int, int] = (0, 0)
    openable_instances: set[str] = field(default_factory=set)

    def has(self, predicate: str, type_name: str) -> bool:
        """Whether some instance of ``type_name`` has the unary ``predicate``."""
        return type_name in self.unary.get(predicate, set())


@dataclass(frozen=True)
class GoalSpec:
    """The two rewritable tokens of a goal and the task type they belong to."""

    task_type: AlfTaskType
    obj: str
    target: str


def _loc_xy(name: str) -> tuple[int, int] | None:
    match = _LOC_RE.match(name)
    if match is None:
        return None
    x = int(match.group(2)) * (-1 if match.group(1) else 1)
    z = int(match.group(4)) * (-1 if match.group(3) else 1)
    return x, z


def parse_facts(problem: str) -> GameFacts:
    """Parse the ``:init`` block of a PDDL problem into ``GameFacts``.

    Raises:
        ValueError: ``problem`` has no ``(:init ... (:goal`` section.
    """
    match = _INIT_RE.search(problem)
    if match is None:
        raise ValueError("problem: expected a PDDL problem with an (:init ...) block followed by (:goal ...)")
    facts = GameFacts()
    inst_type: dict[str, str] = {}
    unary_inst: list[tuple[str, str]] = []
    for pred, args_text in _FACT_RE.findall(match.group(1)):
        args = args_text.split()
        if pred == "objectType" and len(args) == 2:
            facts.obj_instances.setdefault(args[1], []).append(args[0])
            inst_type[args[0]] = args[1]
        elif pred == "receptacleType" and len(args) == 2:
            facts.rec_instances.setdefault(args[1], []).append(args[0])
            inst_type[args[0]] = args[1]
        elif pred == "canContain" and len(args) == 2:
            facts.can_contain.add((args[0], args[1]))
        elif pred == "inReceptacle" and len(args) == 2:
            facts.in_receptacle[args[0]] = args[1]
        elif pred in ("receptacleAtLocation", "objectAtLocation") and len(args) == 2:
            xy = _loc_xy(args[1])
            if xy is not None:
                facts.location[args[0]] = xy
        elif pred == "atLocation" and len(args) == 2:
            xy = _loc_xy(args[1])
            if xy is not None:
                facts.agent_location = xy
        elif len(args) == 1:
            unary_inst.append((pred, args[0]))
    for pred, inst in unary_inst:
        if pred == "openable":
            facts.openable_instances.add(inst)
        if inst in inst_type:
            facts.unary.setdefault(pred, set()).add(inst_type[inst])
    return facts


def _goal_block(problem: str) -> str:
    match = _GOAL_RE.search(problem)
    if match is None:
        raise ValueError("problem: expected a (:goal ...) block")
    return match.group(0)


def parse_goal(problem: str) -> GoalSpec:
    """Read the task type and its two type tokens from the ``(:goal ...)`` block.

    Raises:
        ValueError: no goal block, or a goal shape other than ALFWorld's six single-object task types.
    """
    goal = _goal_block(problem)
    obj_types = _OBJTYPE_RE.findall(goal)
    rec_types = {t for _, t in _RECTYPE_RE.findall(goal)}
    if "(toggleable" in goal:
        lamp_vars = set(re.findall(r"\(toggleable\s+(\?\w+)\)", goal))
        lamps = {t for v, t in obj_types if v in lamp_vars}
        objs = {t for v, t in obj_types if v not in lamp_vars}
        if len(lamps) != 1 or len(objs) != 1 or rec_types:
            raise ValueError(f"problem: unsupported light goal (lamps {sorted(lamps)}, objects {sorted(objs)})")
        return GoalSpec(AlfTaskType.LOOK_AT_OBJ_IN_LIGHT, objs.pop(), lamps.pop())
    objs = {t for _, t in obj_types}
    if len(objs) != 1 or len(rec_types) != 1:
        raise ValueError(f"problem: expected one object type and one receptacle type in the goal, got "
                         f"{sorted(objs)} and {sorted(rec_types)}")
    if "(isClean" in goal:
        kind = AlfTaskType.PICK_CLEAN_THEN_PLACE
    elif "(isHot" in goal:
        kind = AlfTaskType.PICK_HEAT_THEN_PLACE
    elif "(isCool" in goal:
        kind = AlfTaskType.PICK_COOL_THEN_PLACE
    elif len({v for v, _ in obj_types}) == 2:
        kind = AlfTaskType.PICK_TWO_OBJ_AND_PLACE
    else:
        kind = AlfTaskType.PICK_AND_PLACE_SIMPLE
    return GoalSpec(kind, objs.pop(), rec_types.pop())


def check_goal(facts: GameFacts, old: GoalSpec, new: GoalSpec) -> tuple[RejectReason | None, str]:
    """Check a proposed goal against the game's facts (no engine needed).

    Returns:
        ``(None, "")`` when the goal is admissible, else ``(reason, detail)``.
    """
    if new.task_type is not old.task_type:
        return RejectReason.UNSUPPORTED_TASK, f"task type changed from {old.task_type.value} to {new.task_type.value}"
    if (new.obj, new.target) == (old.obj, old.target):
        return RejectReason.NO_CHANGE, "both tokens equal the current goal"
    if new.obj not in facts.obj_instances:
        return RejectReason.UNKNOWN_TYPE, f"object type {new.obj} is not in this game"
    light = new.task_type is AlfTaskType.LOOK_AT_OBJ_IN_LIGHT
    if light:
        if new.target not in facts.obj_instances:
            return RejectReason.UNKNOWN_TYPE, f"lamp type {new.target} is not in this game"
        if not facts.has("toggleable", new.target):
            return RejectReason.CONSTRAINT_VIOLATED, f"{new.target} is not toggleable"
    elif new.target not in facts.rec_instances:
        return RejectReason.UNKNOWN_TYPE, f"receptacle type {new.target} is not in this game"
    if not facts.has("pickupable", new.obj):
        return RejectReason.CONSTRAINT_VIOLATED, f"{new.obj} is not pickupable"
    if not light and (new.target, new.obj) not in facts.can_contain:
        return RejectReason.CONSTRAINT_VIOLATED, f"canContain({new.target}, {new.obj}) is not a fact of this game"
    if new.task_type in _APPLIANCE:
        predicate, appliances = _APPLIANCE[new.task_type]
        if not facts.has(predicate, new.obj):
            return RejectReason.CONSTRAINT_VIOLATED, f"{new.obj} is not {predicate}"
        if not any(a in facts.rec_instances for a in appliances):
            return RejectReason.CONSTRAINT_VIOLATED, f"no {'/'.join(appliances)} in this game"
    need = 2 if new.task_type is AlfTaskType.PICK_TWO_OBJ_AND_PLACE else 1
    if len(facts.obj_instances[new.obj]) < need:
        return RejectReason.CONSTRAINT_VIOLATED, f"{new.obj} has fewer than {need} instances"
    if not light and new.task_type is not AlfTaskType.PICK_AND_PLACE_SIMPLE:
        return None, ""
    if not light:
        targets = set(facts.rec_instances[new.target])
        placed = sum(facts.in_receptacle.get(o) in targets for o in facts.obj_instances[new.obj])
        if placed >= need:
            return RejectReason.CONSTRAINT_VIOLATED, f"the goal already holds at the start ({new.obj} in {new.target})"
    return None, ""


def _swap_tokens(goal: str, old: GoalSpec, new: GoalSpec) -> str:
    lamp_vars = set(re.findall(r"\(toggleable\s+(\?\w+)\)", goal))

    def obj_sub(match: re.Match[str]) -> str:
        var, token = match.group(1), match.group(2)
        if var in lamp_vars:
            return f"(objectType {var} {new.target})" if token == old.target else match.group(0)
        return f"(objectType {var} {new.obj})" if token == old.obj else match.group(0)

    goal = _OBJTYPE_RE.sub(obj_sub, goal)
    return _RECTYPE_RE.sub(lambda m: f"(receptacleType {m.group(1)} {new.target})", goal)


def rewrite_problem(problem: str, new: GoalSpec) -> str:
    """Return ``problem`` with the goal's type tokens replaced by ``new``'s (the ``:init`` block is untouched)."""
    old = parse_goal(problem)
    goal = _goal_block(problem)
    start = len(problem) - len(goal)
    return problem[:start] + _swap_tokens(goal, old, new)


def _word(type_name: str) -> str:
    return type_name.removesuffix("Type").lower()


def goal_text(goal: GoalSpec) -> str:
    """The instruction the agent reads (ALFWorld's phrasing), e.g. ``put some mug on desk.``."""
    return _TEMPLATES[goal.task_type].format(o=_word(goal.obj), t=_word(goal.target))


def type_hardness(facts: GameFacts, goal: GoalSpec) -> float:
    """A search-effort score of a goal in this scene: higher is harder (rarer, hidden, farther).

    ``-log(#obj instances) - 0.5 log(#target instances) + share of obj instances inside openable receptacles +
    0.1 * mean grid distance agent -> nearest obj -> nearest target``. It only ranks swaps; acceptance still comes
    from measured success rates.
    """
    objs = facts.obj_instances.get(goal.obj, [])
    targets = (facts.obj_instances if goal.task_type is AlfTaskType.LOOK_AT_OBJ_IN_LIGHT
               else facts.rec_instances).get(goal.target, [])
    if not objs or not targets:
        return math.inf
    hidden = sum(facts.in_receptacle.get(o) in facts.openable_instances for o in objs) / len(objs)

    def where(inst: str) -> tuple[int, int]:
        return facts.location.get(inst, facts.location.get(facts.in_receptacle.get(inst, ""), facts.agent_location))

    ax, az = facts.agent_location
    best = math.inf
    for o in objs:
        ox, oz = where(o)
        leg = min(abs(ox - tx) + abs(oz - tz) for tx, tz in map(where, targets))
        best = min(best, abs(ax - ox) + abs(az - oz) + leg)
    return -math.log(len(objs)) - 0.5 * math.log(len(targets)) + hidden + 0.1 * best


def write_game(source_game: Path, new_goal: GoalSpec, out_root: Path, *, stem: str) -> Path:
    """Write a rewritten copy of ``source_game`` (and its ``traj_data.json``) under ``out_root`` atomically.

    The directory name is ``<stem>-<hash of the new problem>`` so the same rewrite lands at the same path. The
    grammar's task sentence is regenerated, ``walkthrough`` is emptied (the old plan does not solve the new goal;
    the engine's planner provides the expert commands) and ``solvable`` is left for the planner check to decide.

    Returns:
        the path of the new ``game.tw-pddl``.
    """
    game: dict[str, Any] = json.loads(Path(source_game).read_text())
    problem = rewrite_problem(game["pddl_problem"], new_goal)
    digest = hashlib.sha256(problem.encode()).hexdigest()[:10]
    folder = out_root / f"{stem}-{digest}"
    game = dict(game, pddl_problem=problem, walkthrough=[], solvable=False)
    game["grammar"] = _TASK_RE.sub(lambda m: m.group(1) + "Your task is to: " + goal_text(new_goal) + m.group(2),
                                   game["grammar"])
    traj_path = Path(source_game).parent / "traj_data.json"
    traj: dict[str, Any] = json.loads(traj_path.read_text()) if traj_path.exists() else {}
    params = dict(traj.get("pddl_params", {}))
    params["object_target"] = new_goal.obj.removesuffix("Type")
    if new_goal.task_type is AlfTaskType.LOOK_AT_OBJ_IN_LIGHT:
        params["toggle_target"] = new_goal.target.removesuffix("Type")
    else:
        params["parent_target"] = new_goal.target.removesuffix("Type")
    traj = dict(traj, task_type=new_goal.task_type.value, pddl_params=params,
                turk_annotations={"anns": [{"task_desc": goal_text(new_goal)}]}, rewritten_from=str(source_game))
    atomic_write_json(folder / "traj_data.json", traj)
    return atomic_write_json(folder / "game.tw-pddl", game)

