"""TextWorld procedural games: a fast setting with explicit difficulty knobs, played through the agent-env protocol.

Games are generated offline (TextWorld's own generator and Inform7 compiler, about 2 s per game) into a cache folder,
deterministically from a :class:`TextWorldSpec`: the file name is the spec, so the same spec is generated once and
re-used. Files are written to a temporary folder and renamed into place (never half-written).
"""

from __future__ import annotations

import enum
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.protocols import AgentObservation, StepResult, check_step
from rlanything_core.files import cache_dir as rlanything_cache_dir

__all__ = [
    "TextWorldChallenge",
    "TextWorldEnv",
    "TextWorldEnvFactory",
    "TextWorldSpec",
    "default_textworld_cache",
    "generate_game",
]


class TextWorldChallenge(enum.Enum):
    """TextWorld game families (``tw-make`` names without the ``tw-`` prefix)."""

    COIN_COLLECTOR = "coin_collector"
    """Find the coin; level 1-300 sets the path length (and distractor rooms above 100)."""
    TREASURE_HUNTER = "treasure_hunter"
    """Find and take a named object among distractors; level 1-30 (wrong object loses the game)."""
    SIMPLE = "simple"
    """A fixed small house with a short quest (dense rewards, detailed goal); ``level`` is ignored."""
    CUSTOM = "custom"
    """Explicit knobs: ``world_size`` rooms, ``nb_objects`` objects, ``quest_length`` actions."""


_LEVEL_RANGE = {TextWorldChallenge.COIN_COLLECTOR: (1, 300), TextWorldChallenge.TREASURE_HUNTER: (1, 30)}


@dataclass(frozen=True)
class TextWorldSpec:
    """What to generate; also the cache key.

    Attributes:
        challenge: the family.
        level: difficulty level of ``coin_collector`` (1-300) and ``treasure_hunter`` (1-30).
        seed: generator seed (same spec -> same game).
        world_size: rooms (``custom`` only).
        nb_objects: objects (``custom`` only).
        quest_length: actions in the quest (``custom`` only).
    """

    challenge: TextWorldChallenge = TextWorldChallenge.COIN_COLLECTOR
    level: int = 1
    seed: int = 0
    world_size: int = 3
    nb_objects: int = 5
    quest_length: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.challenge, TextWorldChallenge):
            object.__setattr__(self, "challenge", _as_challenge(self.challenge))
        bounds = _LEVEL_RANGE.get(self.challenge)
        if bounds is not None and not bounds[0] <= self.level <= bounds[1]:
            raise ValueError(f"level must be in {list(bounds)} for {self.challenge.value}, got {self.level}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.challenge is TextWorldChallenge.CUSTOM:
            for name in ("world_size", "nb_objects", "quest_length"):
                if getattr(self, name) < 1:
                    raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def key(self) -> str:
        """File-name stem identifying the game."""
        if self.challenge is TextWorldChallenge.CUSTOM:
            return f"custom-w{self.world_size}-o{self.nb_objects}-q{self.quest_length}-s{self.seed}"
        if self.challenge is TextWorldChallenge.SIMPLE:
            return f"simple-s{self.seed}"
        return f"{self.challenge.value}-l{self.level}-s{self.seed}"


def _as_challenge(value: object) -> TextWorldChallenge:
    try:
        return TextWorldChallenge(value)
    except ValueError:
        names = [c.value for c in TextWorldChallenge]
        raise ValueError(f"challenge must be one of {names}, got {value!r}") from None


def default_textworld_cache() -> Path:
    """``$RLANYTHING_CACHE/textworld`` or ``~/.cache/rlanything/textworld``."""
    return rlanything_cache_dir("textworld")


def _make(spec: TextWorldSpec, options: Any) -> Any:
    import textworld.challenges
    from textworld.generator import make_game

    if spec.challenge is TextWorldChallenge.CUSTOM:
        options.nb_rooms = spec.world_size
        options.nb_objects = spec.nb_objects
        options.chaining.min_length = spec.quest_length
        options.chaining.max_length = spec.quest_length
        options.chaining.max_depth = spec.quest_length
        return make_game(options)
    make = textworld.challenges.CHALLENGES[f"tw-{spec.challenge.value}"][1]
    settings: dict[str, Any] = {"level": spec.level, "rewards": "dense", "goal": "detailed", "test": False}
    return make(settings, options=options)


def generate_game(spec: TextWorldSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Generate (or fetch from the cache) the compiled game of ``spec``.

    Args:
        spec: what to generate.
        cache_dir: cache folder (default :func:`default_textworld_cache`).

    Returns:
        Path of the compiled ``.z8`` game (its ``.json`` sits beside it).
    """
    from textworld import GameOptions
    from textworld.generator import compile_game

    cache = Path(cache_dir) if cache_dir is not None else default_textworld_cache()
    target = cache / f"{spec.key}.z8"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.key}-", dir=cache))
    try:
        options = GameOptions()
        options.seeds = spec.seed
        options.path = str(tmp / f"{spec.key}.z8")
        options.file_ext = ".z8"
        compiled = Path(compile_game(_make(spec, options), options))
        os.replace(compiled.with_suffix(".json"), target.with_suffix(".json"))
        os.replace(compiled, target)  # last: the .z8 existing means the pair is complete
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class TextWorldEnv:
    """One TextWorld game as an :class:`~rlanything_core.envs.protocols.AgentEnv`.

    Args:
        game: a compiled game file, or a :class:`TextWorldSpec` (generated into ``cache_dir`` when needed).
        max_episode_steps: the episode ends (``truncated``) after this many steps; ``None``: no limit.
        cache_dir: see :func:`generate_game`.
    """

    def __init__(
        self,
        game: TextWorldSpec | str | os.PathLike[str],
        *,
        max_episode_steps: int | None = 50,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        path = generate_game(game, cache_dir) if isinstance(game, TextWorldSpec) else Path(game)
        if not path.is_file():
            raise ValueError(f"game must be a compiled TextWorld game file or a TextWorldSpec, got {str(path)!r}")
        self.game_file = path
        self.max_episode_steps = max_episode_steps
        self._engine: Any = None
        self._steps = 0
        self._done = True
        self.walkthrough: tuple[str, ...] = ()

    def reset(self) -> AgentObservation:
        """Start the episode."""
        import textworld
        from textworld.core import EnvInfos

        if self._engine is None:
            infos = EnvInfos(admissible_commands=True, won=True, lost=True, objective=True, extras=["walkthrough"])
            self._engine = textworld.start(str(self.game_file), request_infos=infos)
        state = self._engine.reset()
        self.walkthrough = tuple(state.get("extra.walkthrough") or ())
        self._steps = 0
        self._done = False
        return AgentObservation(
            goal=str(state["objective"]).strip(),
            observation=str(state.feedback),
            admissible_actions=tuple(state["admissible_commands"]),
        )

    def step(self, action: str) -> StepResult:
        """Apply one command.

        Raises:
            ValueError: ``action`` is not a string, or the episode is over.
        """
        check_step(action, episode_over=self._done)
        state, _, done = self._engine.step(action)
        self._steps += 1
        won = bool(state["won"])
        truncated = not done and self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        self._done = bool(done) or truncated
        return StepResult(
            observation=str(state.feedback),
            admissible_actions=() if self._done else tuple(state["admissible_commands"]),
            done=self._done,
            won=won,
            truncated=truncated,
        )

    def close(self) -> None:
        """Release the engine."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        self._done = True


@dataclass(frozen=True)
class TextWorldEnvFactory:
    """A picklable ``game -> TextWorldEnv`` factory for :class:`rlanything_core.envs.parallel.EnvPool`.

    Attributes:
        max_episode_steps: passed to every env.
        cache_dir: passed to every env (as a string, to stay picklable).
    """

    max_episode_steps: int | None = 50
    cache_dir: str | None = None

    def __call__(self, game: TextWorldSpec | str | os.PathLike[str]) -> TextWorldEnv:
        """Build the env of one game."""
        return TextWorldEnv(game, max_episode_steps=self.max_episode_steps, cache_dir=self.cache_dir)
