"""ALFWorld's cheap exact step label: the hand-coded expert's next command at every state an agent reached.

Each played episode is replayed on the engine (deterministic) with ALFWorld's hand-coded expert watching
(:func:`~rlanything_core.envs.alfworld.expert.handcoded_expert_steps` with ``executed``): at every state it names the
command it would take. A step *agrees* when the agent took exactly that command. Where the expert gives up on a state
the agent led it into, that state and the later ones have no label (``None``), never a guess.

It is the label of the step records (``loop.step_records``) and of the judge of known quality
(``collect.expert_judge.ExpertLabelJudge``). Unlike the PDDL planner (``envs/alfworld/oracle.py``, seconds a state),
it costs about an engine replay per episode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlanything_core.envs.alfworld.data import TASK_TYPES
from rlanything_core.envs.alfworld.expert import handcoded_expert_steps

__all__ = ["AlfworldExpertLabeller", "alfworld_task_type", "expert_commands"]


def alfworld_task_type(game_file: str | Path) -> str:
    """The task type of a game (``pick_heat_then_place_in_recep``, ...).

    Its task folder's prefix, else its ``traj_data.json``'s ``task_type`` (a rewritten game's folder may be named
    otherwise); ``""`` when neither.
    """
    path = Path(str(game_file))
    prefix = path.parent.parent.name.split("-", 1)[0]
    if prefix in TASK_TYPES.values():
        return prefix
    traj = path.parent / "traj_data.json"
    if traj.is_file():
        return str(json.loads(traj.read_text()).get("task_type", ""))
    return ""


def expert_commands(game_file: str | Path, actions: Sequence[str], *, seed: int = 0) -> list[str | None]:
    """The hand-coded expert's command at each state of ``actions`` played in ``game_file``, one per action.

    ``None`` from the first state it gives up on (a state the agent led it into that it cannot plan from).
    """
    if not actions:
        return []
    steps = handcoded_expert_steps(game_file, executed=list(actions), seed=seed)
    return [s.action for s in steps] + [None] * (len(actions) - len(steps))


class AlfworldExpertLabeller:
    """A :class:`~rlanything_core.loop.step_records.StepLabeller` for ALFWorld: the hand-coded expert's commands.

    Args:
        seed: seeds the expert's own tie-breaks (between equivalent objects); the same for every episode, so the label
            of a state does not depend on which batch it was played in.
    """

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = int(seed)

    def task_type(self, task: Any) -> str:
        """See :func:`alfworld_task_type` (an environment task is the game file)."""
        return alfworld_task_type(task)

    def reference_actions(self, items: Sequence[tuple[Any, Sequence[str]]]) -> list[list[str | None]]:
        """The expert's command at every step of each ``(game file, executed commands)``."""
        return [expert_commands(game, actions, seed=self.seed) for game, actions in items]
