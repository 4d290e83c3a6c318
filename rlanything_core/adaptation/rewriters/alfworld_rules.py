"""Rule-based ALFWorld rewriter: enumerate the goal swaps the game's facts allow, rank them by rarity, verify.

Harder = a swap whose ``type_hardness`` (rarer types, hidden in closed receptacles, farther) exceeds the current
goal's, hardest first; easier = lower hardness, easiest first (more common, closer). The top candidates are written
as versioned game files and must compile in the engine and be solved by the planner (``verify_in_engine``) before
they are returned as valid; the ones that fail are returned rejected with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rlanything_core.adaptation.rewriters.alfworld_goal import (
    AlfTaskType,
    GameFacts,
    GoalSpec,
    check_goal,
    parse_facts,
    parse_goal,
    type_hardness,
    write_game,
)
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec, _rejected

if TYPE_CHECKING:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.feedback import TaskFeedback

__all__ = [
    "AlfworldRuleRewriter",
    "EngineVerifier",
    "GameVerifier",
    "admissible_goals",
    "load_game",
    "materialize",
]


class GameVerifier(Protocol):
    """Engine checks of a written game file (``envs.alfworld.oracle`` provides the real ones)."""

    def compiles(self, game_file: str) -> tuple[bool, str]:
        """Whether the engine loads the game, and an error message when it does not."""
        ...

    def is_solvable(self, game_file: str) -> bool:
        """Whether the planner finds a plan for the game's goal."""
        ...


@dataclass
class EngineVerifier:
    """The real checks: ``rlanything_core.envs.alfworld.oracle.compiles`` / ``is_solvable`` (imported lazily).

    Attributes:
        planner_timeout_s: a candidate the planner cannot solve within this time is treated as unsolvable (``None``:
            no limit).
    """

    planner_timeout_s: float | None = 30.0

    def compiles(self, game_file: str) -> tuple[bool, str]:
        """Load the game in the TextWorld engine."""
        from rlanything_core.envs.alfworld import oracle

        return oracle.compiles(game_file)

    def is_solvable(self, game_file: str) -> bool:
        """Run the fast-downward planner on the game."""
        from rlanything_core.envs.alfworld import oracle

        return oracle.is_solvable(game_file, timeout_s=self.planner_timeout_s)


def load_game(task: TaskSpec) -> tuple[Path, str]:
    """The game file of an ALFWorld task and its PDDL problem text.

    Raises:
        ValueError: ``task.data`` has no readable ``game_file``.
    """
    path = task.data.get("game_file")
    if not isinstance(path, str) or not Path(path).is_file():
        raise ValueError(f"task.data['game_file']: expected an existing game.tw-pddl path, got {path!r}")
    return Path(path), json.loads(Path(path).read_text())["pddl_problem"]


def admissible_goals(facts: GameFacts, current: GoalSpec) -> list[GoalSpec]:
    """Every goal of the same task type that passes ``check_goal`` (sorted by name for determinism)."""
    if current.task_type is AlfTaskType.LOOK_AT_OBJ_IN_LIGHT:
        targets = sorted(t for t in facts.obj_instances if facts.has("toggleable", t))
    else:
        targets = sorted(facts.rec_instances)
    out = []
    for obj in sorted(facts.obj_instances):
        for target in targets:
            goal = GoalSpec(current.task_type, obj, target)
            if check_goal(facts, current, goal)[0] is None:
                out.append(goal)
    return out


def materialize(
    task: TaskSpec, goal: GoalSpec, *, direction: str, rewriter: str, out_dir: Path, verifier: GameVerifier,
    **extra: object,
) -> Candidate:
    """Write ``goal`` as a new versioned game under ``out_dir``, compile and plan it, return the candidate."""
    source, _ = load_game(task)
    version = task.version + 1
    folder = out_dir / "alfworld" / _slug(task.root_id)
    game_file = write_game(source, goal, folder, stem=f"v{version}-{goal.obj}-{goal.target}")
    new_task = TaskSpec(task_id=f"{task.root_id}@v{version}-{game_file.parent.name.rsplit('-', 1)[-1]}",
                        kind="alfworld", root_id=task.root_id, version=version,
                        data={"game_file": str(game_file), "goal": [goal.task_type.value, goal.obj, goal.target]})
    info = {"old_tokens": None, "new_tokens": [goal.obj, goal.target]}
    info.update(extra)  # type: ignore[arg-type]
    ok, message = verifier.compiles(str(game_file))
    if not ok:
        return _rejected(new_task, task, direction, rewriter, RejectReason.COMPILE_FAILED, message[:300], info=info)
    if not verifier.is_solvable(str(game_file)):
        return _rejected(new_task, task, direction, rewriter, RejectReason.UNSOLVABLE, "planner found no plan",
                         info=info)
    return Candidate(task=new_task, parent_id=task.task_id, root_id=task.root_id, direction=direction,
                     rewriter=rewriter, valid=True, info=info)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[-120:]


@dataclass
class AlfworldRuleRewriter:
    """Rank the admissible swaps by rarity and return up to ``num_candidates`` engine-verified candidates.

    Args:
        out_dir: run directory under which candidate games are written (never the shared dataset).
        num_candidates: valid candidates wanted per request.
        max_checks: at most this many swaps are written and verified per request (each costs a planner call).
        verifier: engine checks; ``EngineVerifier()`` by default.
    """

    out_dir: Path
    num_candidates: int = 1
    max_checks: int = 4
    verifier: GameVerifier | None = None
    name: str = "alfworld_rules"

    def __post_init__(self) -> None:
        if self.num_candidates < 1 or self.max_checks < self.num_candidates:
            raise ValueError(f"max_checks: expected >= num_candidates >= 1, got {self.max_checks}, "
                             f"{self.num_candidates}")
        self.out_dir = Path(self.out_dir)

    def ranked(self, facts: GameFacts, current: GoalSpec, direction: Direction) -> list[tuple[float, GoalSpec]]:
        """Admissible swaps strictly harder (hardest first) or strictly easier (easiest first) than ``current``."""
        base = type_hardness(facts, current)
        scored = [(type_hardness(facts, g), g) for g in admissible_goals(facts, current)]
        key: Callable[[tuple[float, GoalSpec]], tuple[float, str, str]]
        if direction.value == "harder":
            scored = [s for s in scored if s[0] > base]
            key = lambda s: (-s[0], s[1].obj, s[1].target)  # noqa: E731
        elif direction.value == "easier":
            scored = [s for s in scored if s[0] < base]
            key = lambda s: (s[0], s[1].obj, s[1].target)  # noqa: E731
        else:
            return []
        return sorted(scored, key=key)

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Return verified candidates (and the rejected ones that were tried) for ``task`` toward ``direction``."""
        verifier = self.verifier or EngineVerifier()
        try:
            _, problem = load_game(task)
            facts, current = parse_facts(problem), parse_goal(problem)
        except (ValueError, KeyError, json.JSONDecodeError) as err:
            return [_rejected(None, task, direction.value, self.name, RejectReason.UNSUPPORTED_TASK, str(err))]
        ranked = self.ranked(facts, current, direction)
        if not ranked:
            return [_rejected(None, task, direction.value, self.name, RejectReason.NO_CHANGE,
                              f"no admissible swap is {direction.value} than {current.obj}/{current.target}")]
        out: list[Candidate] = []
        for score, goal in ranked[: self.max_checks]:
            cand = materialize(task, goal, direction=direction.value, rewriter=self.name, out_dir=self.out_dir,
                               verifier=verifier, hardness=score, old_hardness=type_hardness(facts, current))
            cand.info["old_tokens"] = [current.obj, current.target]
            out.append(cand)
            if sum(c.valid for c in out) >= self.num_candidates:
                break
        return out
