"""One ALFWorld episode on the real engine (TextWorld's PDDL backend with ALFWorld's wrappers).

The direct TextWorld route: ``textworld.start(game_file, EnvInfos(admissible_commands=True, won=True,
extras=["gamefile"]), wrappers=[AlfredDemangler(shuffle=False), AlfredInfos])``. The engine is deterministic: the same
game and the same actions give the same states (the parallel pool relies on this to rebuild episodes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.alfworld.data import AlfworldGame
from rlanything_core.envs.alfworld.downward_libraries import reuse_downward_libraries
from rlanything_core.envs.alfworld.engine_cache import (
    give_engine,
    lighten_grammar_derivation,
    memoize_grammar_parsing,
    memoize_logic_parsing,
    memoize_pddl_translation,
    take_engine,
)
from rlanything_core.envs.protocols import AgentObservation, StepResult, check_step

__all__ = ["AlfworldEnv", "AlfworldEnvFactory", "compiles", "parse_goal", "start_engine"]

_GOAL_MARKER = "Your task is to: "


def parse_goal(observation: str) -> str:
    """The goal from ALFWorld's first observation (the text after ``"Your task is to: "``, one line).

    Args:
        observation: the first observation.

    Returns:
        The goal sentence, or ``""`` when the marker is absent.
    """
    start = observation.find(_GOAL_MARKER)
    if start < 0:
        return ""
    return observation[start + len(_GOAL_MARKER) :].split("\n", 1)[0].strip()


def speed_up_engine() -> None:
    """Install this process's output-preserving TextWorld speed-ups (see ``engine_cache``; idempotent)."""
    memoize_pddl_translation()
    reuse_downward_libraries()
    memoize_logic_parsing()
    memoize_grammar_parsing()
    lighten_grammar_derivation()


def start_engine(game_file: str | os.PathLike[str], *, policy_commands: bool = False, facts: bool = False) -> Any:
    """Load a ``game.tw-pddl`` file into a TextWorld PDDL environment with ALFWorld's wrappers.

    Args:
        game_file: the game file.
        policy_commands: ask the planner for an optimal remaining plan at every reset/step (slow: one
            fast-downward search per step).
        facts: also report the state's ``facts`` (the hand-coded expert reads them); the same observations and
            commands.

    Returns:
        The (not yet reset) ``textworld.core.Environment``.
    """
    import textworld
    from textworld.core import EnvInfos

    saved = os.environ.get("ALFWORLD_DATA")
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

    if saved is None:  # importing alfworld sets $ALFWORLD_DATA (to ~/.cache/alfworld); keep the user's environment
        os.environ.pop("ALFWORLD_DATA", None)

    speed_up_engine()
    infos = EnvInfos(admissible_commands=True, won=True, facts=facts, extras=["gamefile"],
                     policy_commands=policy_commands)
    return textworld.start(str(game_file), request_infos=infos, wrappers=[AlfredDemangler(shuffle=False), AlfredInfos])


def _game_path(game: AlfworldGame | str | os.PathLike[str]) -> Path:
    path = game.game_file if isinstance(game, AlfworldGame) else Path(game)
    if not path.is_file():
        raise ValueError(f"game must be an existing game.tw-pddl file, got {str(path)!r}")
    return path


class AlfworldEnv:
    """One ALFWorld game as an :class:`~rlanything_core.envs.protocols.AgentEnv`.

    Args:
        game: the game (an :class:`AlfworldGame` or a path to ``game.tw-pddl``).
        max_episode_steps: the episode ends (``truncated``) after this many steps without winning; ``None``: no limit.
        max_idle_engines: on :meth:`close`, the engine goes to this process's idle-engine cache, which keeps at most
            this many (least recently returned closed first; ``None``: ``engine_cache.MAX_IDLE_ENGINES``; ``0``: the
            engine is closed). A reused engine is reset to the game's initial state: the same episodes as a freshly
            loaded one.

    Example:
        >>> env = AlfworldEnv(game)  # doctest: +SKIP
        >>> obs = env.reset(); res = env.step(obs.admissible_actions[0])  # doctest: +SKIP
    """

    def __init__(
        self,
        game: AlfworldGame | str | os.PathLike[str],
        *,
        max_episode_steps: int | None = 50,
        max_idle_engines: int | None = None,
    ) -> None:
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        if max_idle_engines is not None and max_idle_engines < 0:
            raise ValueError(f"max_idle_engines: expected >= 0 or None, got {max_idle_engines}")
        self.game_file = _game_path(game)
        self.max_episode_steps = max_episode_steps
        self.max_idle_engines = max_idle_engines
        self._engine: Any = None
        self._steps = 0
        self._done = True

    def reset(self) -> AgentObservation:
        """Start the episode from the game's initial state."""
        if self._engine is None:  # a loaded engine of this game from an earlier episode, else parse the game
            self._engine = take_engine(self.game_file) or start_engine(self.game_file)
        state = self._engine.reset()
        self._steps = 0
        self._done = False
        text = str(state.feedback)
        return AgentObservation(
            goal=parse_goal(text), observation=text, admissible_actions=tuple(state["admissible_commands"])
        )

    def step(self, action: str) -> StepResult:
        """Apply one command.

        Raises:
            ValueError: ``action`` is not a string, or the episode is over (call :meth:`reset`).
        """
        check_step(action, episode_over=self._done)
        state, _, _ = self._engine.step(action)
        self._steps += 1
        won = bool(state["won"])
        truncated = not won and self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        self._done = won or truncated
        admissible = () if self._done else tuple(state["admissible_commands"])
        return StepResult(
            observation=str(state.feedback),
            admissible_actions=admissible,
            done=self._done,
            won=won,
            truncated=truncated,
        )

    @property
    def steps(self) -> int:
        """Steps taken since the last reset."""
        return self._steps

    def close(self) -> None:
        """Release the engine (to this process's idle-engine cache, for the game's next episode)."""
        if self._engine is not None:
            give_engine(self.game_file, self._engine, max_idle=self.max_idle_engines)
            self._engine = None
        self._done = True


@dataclass(frozen=True)
class AlfworldEnvFactory:
    """A picklable ``game -> AlfworldEnv`` factory (for :class:`rlanything_core.envs.parallel.EnvPool`).

    Attributes:
        max_episode_steps: passed to every :class:`AlfworldEnv`.
        max_idle_engines: passed to every :class:`AlfworldEnv` (the bound of each worker's idle-engine cache).
    """

    max_episode_steps: int | None = 50
    max_idle_engines: int | None = None

    def __call__(self, game: AlfworldGame | str | os.PathLike[str]) -> AlfworldEnv:
        """Build the env of one game."""
        return AlfworldEnv(game, max_episode_steps=self.max_episode_steps, max_idle_engines=self.max_idle_engines)


def compiles(game_file: str | os.PathLike[str]) -> tuple[bool, str]:
    """Whether TextWorld loads and resets a (possibly rewritten) ALFWorld game file.

    Args:
        game_file: the candidate ``game.tw-pddl``.

    Returns:
        ``(True, "")`` when it loads and resets with a goal and admissible commands, else ``(False, reason)``.
        Never raises for a bad file: a broken candidate is data.
    """
    path = Path(game_file)
    if not path.is_file():
        return False, f"no such file: {path}"
    engine = None
    try:
        engine = start_engine(path)
        state = engine.reset()
        if not state["admissible_commands"]:
            return False, "no admissible commands after reset"
        if not parse_goal(str(state.feedback)):
            return False, "no 'Your task is to:' goal in the first observation"
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any engine failure means "does not compile"
        return False, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        if engine is not None:
            try:
                engine.close()
            except Exception:  # noqa: BLE001
                pass
