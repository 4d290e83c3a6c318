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
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["alfworld_state_text", "judge_step_text"]

_EFFECTS = {"heat": "heated", "cool": "cooled", "clean": "cleaned"}


def _object_of(action: str, verb: str, sep: str) -> tuple[str, str]:
    """``("apple 1", "fridge 1")`` from ``"<verb> apple 1 <sep> fridge 1"``."""
    rest = action[len(verb) + 1 :]
    obj, _, target = rest.partition(f" {sep} ")
    return obj.strip(), target.strip()


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
