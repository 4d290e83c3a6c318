"""TextWorld's parts: generated games on a grid of (rooms, quest length) cells; one evaluation split per quest length.

:class:`TextWorldTasks` is what ``rlanything_core/conf/setting/textworld.yaml`` names (``setting.parts.environment``),
built from the grid's sizes. A task's parameters (rooms, objects, quest length, seed) are its ``TaskSpec.data``: the
rewriter (``rlanything_core.adaptation.rewriters.textworld``) makes harder or easier ones of the same game.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.config.fields import bounded
from rlanything_core.envs.textworld_games import TextWorldChallenge, TextWorldEnvFactory, TextWorldSpec
from rlanything_core.loop.evaluation import EvalSplit
from rlanything_core.settings.protocol import Runner, SettingError

__all__ = ["EVAL_SEED_BASE", "TextWorldTasks", "textworld_env_task", "textworld_spec"]

EVAL_SEED_BASE = 777_000
"""Seeds of the evaluation games (the training games' seeds stay below it)."""


@dataclass(frozen=True)
class TextWorldTasks:
    """TextWorld as a setting (:class:`~rlanything_core.settings.protocol.AgentTasks`).

    Attributes:
        nb_objects: objects per game.
        train_rooms: the training grid's room counts.
        train_quest_lengths: the training grid's quest lengths.
        seeds_per_cell: training games per (rooms, quest length) cell.
        eval_quest_lengths: one evaluation split (``quest_<n>``) per quest length.
        eval_rooms: rooms of every evaluation game.
        eval_games: games per evaluation split.
        cache_dir: where generated games are kept (``None``: ``$RLANYTHING_CACHE/textworld`` or
            ``~/.cache/rlanything/textworld``).
    """

    runner: ClassVar[Runner] = Runner.WORKERS

    nb_objects: int = bounded(4, ge=1)
    train_rooms: Sequence[int] = (1, 2)
    train_quest_lengths: Sequence[int] = (1, 2, 3)
    seeds_per_cell: int = bounded(1, ge=1)
    eval_quest_lengths: Sequence[int] = (1, 3, 5)
    eval_rooms: int = bounded(3, ge=1)
    eval_games: int | None = 8
    cache_dir: str | None = None

    def check(self) -> None:
        """The evaluation games are generated: their number must be given.

        Raises:
            SettingError: ``eval_games`` is ``None`` (the whole split of a generator has no size).
        """
        if self.eval_games is None:
            raise SettingError("eval_games", "TextWorld generates its evaluation games: null gives no count",
                               "set eval.games to a number of games per split")  # fmt: skip

    def roots(self) -> list[TaskSpec]:
        """``seeds_per_cell`` games per (rooms, quest length) cell of the training grid."""
        roots = []
        for rooms in self.train_rooms:
            for quest in self.train_quest_lengths:
                for k in range(int(self.seeds_per_cell)):
                    params = {
                        "nb_rooms": int(rooms),
                        "nb_objects": int(self.nb_objects),
                        "quest_length": int(quest),
                        "seed": 100 * k + 10 * int(rooms) + int(quest),
                    }
                    task_id = "tw-r{nb_rooms}-o{nb_objects}-q{quest_length}-s{seed}".format(**params)
                    roots.append(TaskSpec(task_id=task_id, kind="textworld", root_id=task_id, data=params))
        return roots

    def splits(self) -> list[EvalSplit]:
        """``quest_<n>`` per evaluation quest length: ``eval_games`` games of ``eval_rooms`` rooms."""
        self.check()
        splits = []
        for quest in self.eval_quest_lengths:
            specs = [
                textworld_spec(
                    {"nb_rooms": int(self.eval_rooms), "nb_objects": int(self.nb_objects),
                     "quest_length": int(quest), "seed": EVAL_SEED_BASE + k}
                )
                for k in range(int(self.eval_games or 0))
            ]  # fmt: skip
            splits.append(EvalSplit(f"quest_{quest}", tuple(specs), tuple(s.key for s in specs)))
        return splits

    def env_factory(self, max_steps: int) -> TextWorldEnvFactory:
        """TextWorld environments of ``max_steps`` actions, generating into :attr:`cache_dir`."""
        cache = None if self.cache_dir is None else str(self.cache_dir)
        return TextWorldEnvFactory(max_episode_steps=max_steps, cache_dir=cache)

    def to_env_task(self, task: TaskSpec) -> TextWorldSpec:
        """See :func:`textworld_env_task`."""
        return textworld_env_task(task)

    def step_oracle(self) -> None:
        """TextWorld has no step oracle."""
        return None


def textworld_spec(params: dict[str, Any]) -> TextWorldSpec:
    """The generator spec of a TextWorld task's parameters."""
    return TextWorldSpec(
        challenge=TextWorldChallenge.CUSTOM,
        world_size=int(params["nb_rooms"]),
        nb_objects=int(params["nb_objects"]),
        quest_length=int(params["quest_length"]),
        seed=int(params["seed"]),
    )


def textworld_env_task(task: TaskSpec) -> TextWorldSpec:
    """What a TextWorld environment is built from: the generator spec of the pool task's parameters."""
    return textworld_spec(task.data)
