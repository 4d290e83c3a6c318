"""Expert demonstrations: replay a game's stored walkthrough on the real engine and record every decision.

Each record holds what the agent would see at that step (goal, earlier turns, observation, admissible commands)
and the expert's command. Used for a supervised warm start of the policy on the *training* split only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlanything_core.envs.alfworld.env import AlfworldEnv

__all__ = ["ExpertStep", "expert_steps", "load_or_build_expert_steps"]


@dataclass(frozen=True)
class ExpertStep:
    """One expert decision.

    Attributes:
        game_file: the game it comes from.
        goal: the task sentence.
        history: earlier ``(observation, action)`` turns.
        observation: the current observation.
        admissible_actions: the commands offered.
        action: the expert's command.
    """

    game_file: str
    goal: str
    history: tuple[tuple[str, str], ...]
    observation: str
    admissible_actions: tuple[str, ...]
    action: str


def expert_steps(game_file: str | os.PathLike[str], *, max_steps: int | None = None) -> list[ExpertStep]:
    """Replay the game's ``walkthrough`` and return one record per command (up to ``max_steps``).

    Raises:
        ValueError: the game has no walkthrough, or replaying it does not win (a broken demonstration).
    """
    path = Path(game_file)
    walkthrough = list(json.loads(path.read_text()).get("walkthrough") or [])
    if not walkthrough:
        raise ValueError(f"game_file: {path} has no walkthrough")
    env = AlfworldEnv(path, max_episode_steps=None)
    try:
        first = env.reset()
        observation, admissible = first.observation, first.admissible_actions
        history: list[tuple[str, str]] = []
        out: list[ExpertStep] = []
        won = False
        for action in walkthrough[: max_steps or len(walkthrough)]:
            out.append(ExpertStep(str(path), first.goal, tuple(history), observation, tuple(admissible), action))
            result = env.step(action)
            history.append((observation, action))
            observation, admissible = result.observation, result.admissible_actions
            won = result.won
            if result.done:
                break
        if max_steps is None and not won:
            raise ValueError(f"game_file: replaying the walkthrough of {path} does not win")
        return out
    finally:
        env.close()


def load_or_build_expert_steps(
    games: Sequence[str | os.PathLike[str]], cache_file: str | os.PathLike[str]
) -> list[ExpertStep]:
    """Expert steps of ``games``, cached as JSON (written atomically) so each game is replayed once.

    Games whose walkthrough cannot be replayed are skipped (and listed under ``"skipped"`` in the cache).
    """
    cache = Path(cache_file)
    wanted = [str(g) for g in games]
    if cache.is_file():
        data = json.loads(cache.read_text())
        if data.get("games") == wanted:
            return [
                ExpertStep(
                    s["game_file"],
                    s["goal"],
                    tuple(tuple(t) for t in s["history"]),  # type: ignore[misc]
                    s["observation"],
                    tuple(s["admissible_actions"]),
                    s["action"],
                )
                for s in data["steps"]
            ]
    steps: list[ExpertStep] = []
    skipped: list[str] = []
    for game in wanted:
        try:
            steps.extend(expert_steps(game))
        except ValueError:
            skipped.append(game)
    payload = {
        "games": wanted,
        "skipped": skipped,
        "steps": [
            {
                "game_file": s.game_file,
                "goal": s.goal,
                "history": [list(t) for t in s.history],
                "observation": s.observation,
                "admissible_actions": list(s.admissible_actions),
                "action": s.action,
            }
            for s in steps
        ],
    }
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, cache)
    return steps
