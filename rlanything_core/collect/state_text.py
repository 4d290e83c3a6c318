"""The state text an encoder policy reads: a compact summary of a text-game episode worked out from its own history.

A small encoder sees at most a few hundred tokens, so instead of the full transcript it reads what a player keeps in
mind (all derived from the agent's own commands, never from the engine's hidden state):

- ``task``: the goal;
- ``holding``: the object last taken and not yet put down, with what was done to it (heated, cooled, cleaned);
- ``placed``: objects already put somewhere (two-object tasks need to know the first one is done);
- ``last actions``: the most recent commands, so that the scorer can learn not to repeat itself (loops were the
  cause of almost every failed episode of a scorer without them);
- ``observation``: what the last command returned;
- ``visited``: receptacles already gone to (search without revisiting);
- ``before``: the earlier turns, last, where a cut at the token budget costs least.

The encoder judge reads a step text chosen by config (``votes.encoder.step_text``, a :class:`JudgeStepText`):
:class:`ActionResultText` (goal, action, result, previous actions, the observation before acting; the default) or
:class:`StateSummaryText`, which adds the policy's own summary (``holding / placed / visited``): what the paper's
judge reads in the whole history (arXiv 2602.02488), and what decides progress in clean/cool/heat tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ActionResultText",
    "JudgeStepText",
    "StateSummaryText",
    "alfworld_state_text",
    "judge_step_text",
    "state_summary",
]

_EFFECTS = {"heat": "heated", "cool": "cooled", "clean": "cleaned"}


def _object_of(action: str, verb: str, sep: str) -> tuple[str, str]:
    """``("apple 1", "fridge 1")`` from ``"<verb> apple 1 <sep> fridge 1"``."""
    rest = action[len(verb) + 1 :]
    obj, _, target = rest.partition(f" {sep} ")
    return obj.strip(), target.strip()


def state_summary(history: Sequence[tuple[str, str]]) -> tuple[str, list[str], list[str]]:
    """``(holding, placed, visited)`` worked out from the agent's own commands (never the engine's hidden state).

    ``holding``: the object last taken and not put down, with what was done to it (``"apple 1 (heated)"``), else
    ``"nothing"``; ``placed``: ``"<object> in <receptacle>"`` of every put; ``visited``: receptacles gone to, in order.
    """
    holding: str | None = None
    effects: list[str] = []
    placed: list[str] = []
    visited: list[str] = []
    for _, action in history:
        verb = action.split(" ", 1)[0]
        if verb == "take":
            holding, effects = _object_of(action, "take", "from")[0], []
        elif verb in ("move", "put"):
            obj, target = _object_of(action, verb, "to" if verb == "move" else "in/on")
            placed.append(f"{obj} in {target}")
            holding, effects = None, []
        elif verb in _EFFECTS and holding is not None:
            effects.append(_EFFECTS[verb])
        elif action.startswith("go to "):
            place = action[len("go to ") :].strip()
            if place not in visited:
                visited.append(place)
    held = "nothing" if holding is None else holding + (f" ({', '.join(effects)})" if effects else "")
    return held, placed, visited


def alfworld_state_text(
    goal: str,
    history: Sequence[tuple[str, str]],
    observation: str,
    *,
    earlier_turns: int = 2,
    recent_actions: int = 4,
) -> str:
    """The state text of one step (see the module docstring).

    Args:
        goal: the task sentence.
        history: earlier ``(observation, action)`` turns, oldest first.
        observation: the current observation.
        earlier_turns: earlier turns rendered in full at the end.
        recent_actions: commands listed on the ``last actions`` line.

    Returns:
        One string, most important first.
    """
    held, placed, visited = state_summary(history)
    lines = [f"task: {goal.strip()}", f"holding: {held}"]
    if placed:
        lines.append("placed: " + "; ".join(placed))
    actions = [a for _, a in history][-recent_actions:] if recent_actions > 0 else []
    lines.append("last actions: " + ("; ".join(actions) if actions else "none"))
    lines.append(f"observation: {observation.strip()}")
    if visited:
        lines.append("visited: " + ", ".join(visited))
    for obs, action in list(history)[-earlier_turns:][::-1] if earlier_turns > 0 else []:
        lines.append(f"before: {action} -> {obs.strip()}")
    return "\n".join(lines)


def judge_step_text(goal: str, observation: str, action: str, next_observation: str, previous: Sequence[str]) -> str:
    """What an encoder judge reads about one step: the goal, the context, the action and what it led to.

    Args:
        goal: the task sentence.
        observation: what the agent saw before acting.
        action: the command it took.
        next_observation: what the environment answered.
        previous: the commands before this one (the last few; a repeated command is a telling sign).
    """
    before = "; ".join(previous) if previous else "none"
    return (
        f"task: {goal.strip()}\naction: {action}\nresult: {next_observation.strip()}\n"
        f"previous actions: {before}\nseen before acting: {observation.strip()}"
    )


class JudgeStepText(Protocol):
    """What an encoder judge reads about step ``index`` of an episode (``collect.scorer_selection.EncoderVotes``)."""

    def __call__(self, goal: str, history: Sequence[tuple[str, str]], observation: str, action: str,
                 next_observation: str) -> str:  # fmt: skip
        """The step text; ``history``: the earlier ``(observation, action)`` turns, oldest first."""
        ...


@dataclass(frozen=True)
class ActionResultText:
    """Today's judge input (:func:`judge_step_text`): goal, action, result, previous commands, the observation before.

    Args:
        previous_actions: earlier commands shown.
    """

    previous_actions: int = 3

    def __call__(self, goal: str, history: Sequence[tuple[str, str]], observation: str, action: str,
                 next_observation: str) -> str:  # fmt: skip
        """See :class:`JudgeStepText`."""
        previous = [a for _, a in history][-self.previous_actions :] if self.previous_actions > 0 else []
        return judge_step_text(goal, observation, action, next_observation, previous)


@dataclass(frozen=True)
class StateSummaryText:
    """The judge input that sees what the policy sees: its state summary, the action and the observation after it.

    Task, ``holding / placed / visited``, recent history, action and result, most decisive first: a cut at the token
    budget drops the observation before acting, then the history's tail.

    Args:
        recent_actions: earlier commands on the ``last actions`` line.
    """

    recent_actions: int = 4

    def __call__(self, goal: str, history: Sequence[tuple[str, str]], observation: str, action: str,
                 next_observation: str) -> str:  # fmt: skip
        """See :class:`JudgeStepText`."""
        held, placed, visited = state_summary(history)
        lines = [f"task: {goal.strip()}", f"holding: {held}", "placed: " + ("; ".join(placed) if placed else "nothing"),
                 f"action: {action}", f"result: {next_observation.strip()}"]  # fmt: skip
        actions = [a for _, a in history][-self.recent_actions :] if self.recent_actions > 0 else []
        lines.append("last actions: " + ("; ".join(actions) if actions else "none"))
        lines.append("visited: " + (", ".join(visited) if visited else "nothing"))
        lines.append(f"seen before acting: {observation.strip()}")
        return "\n".join(lines)
