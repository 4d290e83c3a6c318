"""ALFWorld's parts: the training split's games as the pool, two evaluation splits, the planner as step oracle.

:class:`AlfworldTasks` is what ``rlanything_core/conf/setting/alfworld.yaml`` names (``setting.parts.environment``),
built from the data folder, the splits, the task types and the sample sizes and seeds. The training pool and each
evaluation split hold every task type in proportion (:func:`~rlanything_core.envs.alfworld.sampling.stratified_sample`),
and the pool never holds a game that the evaluation plays.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.config.fields import bounded
from rlanything_core.digests import file_digest
from rlanything_core.envs.alfworld.data import AlfworldGame, list_games, resolve_data_root
from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
from rlanything_core.envs.alfworld.expert_agreement import AlfworldExpertLabeller
from rlanything_core.envs.alfworld.oracle import StepLabel, label_trajectory, planner_version
from rlanything_core.envs.alfworld.sampling import stratified_sample
from rlanything_core.files import cache_dir
from rlanything_core.loop.evaluation import EvalSplit
from rlanything_core.loop.oracle_labels import StoredLabels
from rlanything_core.settings.protocol import Runner, SettingError, StepOracle

__all__ = ["AlfworldTasks", "alfworld_env_task", "alfworld_oracle", "game_id", "training_pool_summary"]


@dataclass(frozen=True)
class AlfworldTasks:
    """ALFWorld's games as a setting (:class:`~rlanything_core.settings.protocol.AgentTasks`).

    Attributes:
        data_root: the folder holding ``json_2.1.1/``; ``None``: ``$ALFWORLD_DATA``, else ``../shared/alfworld``
            beside the repository (:func:`~rlanything_core.envs.alfworld.data.resolve_data_root`).
        train_split: the split whose games make the training pool.
        eval_splits: ``{evaluation split name: ALFWorld split}``.
        task_types: the task types (1..6) played.
        train_games: the pool's size (``None``: every game of ``train_split`` outside the evaluation games).
        train_sample_seed: which training games the stratified draw takes.
        eval_games: games per evaluation split (``None``: the whole split).
        eval_sample_seed: which evaluation games the stratified draw takes (the same for every arm and seed).
        label_store: keep the planner's step labels on disk, keyed by a content hash of the game file, the actions
            and the planner's code (:class:`~rlanything_core.loop.oracle_labels.StoredLabels`): the judge's probe set
            is planned once per probe set, and every arm, seed and later run reads the same labels back. ``False``:
            plan every time.
        label_store_dir: where (``None``: ``planner_labels`` in the user's cache folder,
            :func:`~rlanything_core.files.cache_dir`).
        max_idle_engines: loaded ALFWorld engines an environment worker keeps for its games' next episodes
            (``None``: :data:`~rlanything_core.envs.alfworld.engine_cache.MAX_IDLE_ENGINES`).
    """

    runner: ClassVar[Runner] = Runner.WORKERS

    data_root: str | None = None
    train_split: str = "valid_train"
    eval_splits: Mapping[str, str] = field(default_factory=dict)
    task_types: Sequence[int] = (1, 2, 3, 4, 5, 6)
    train_games: int | None = None
    train_sample_seed: int = bounded(0, ge=0)
    eval_games: int | None = None
    eval_sample_seed: int = 0
    label_store: bool = True
    label_store_dir: str | None = None
    max_idle_engines: int | None = bounded(None, ge=0)

    def check(self) -> None:
        """Refuse data and sizes that cannot work, before any work.

        The data root holds the games, every split named (training, evaluation) has games of the task types, and the
        training split holds ``train_games`` games outside the evaluation games.

        Raises:
            SettingError: naming ``ALFWORLD_DATA``, ``data_root``, ``train_split``, ``eval_splits.<name>`` or
                ``train_games``.
        """
        explicit = os.environ.get("ALFWORLD_DATA")
        # `import alfworld` sets ALFWORLD_DATA to its own (empty) cache when unset: only another value is the user's
        if self.data_root is None and explicit and Path(explicit).expanduser() != Path.home() / ".cache/alfworld":
            path = Path(explicit).expanduser()
            if not ((path / "json_2.1.1").is_dir() or (path / "train.tar.gz").is_file()):
                raise SettingError(
                    "ALFWORLD_DATA",
                    f"the environment variable is set to {explicit!r}, which holds no ALFWorld games (json_2.1.1/ "
                    "or train.tar.gz); an explicit setting is never replaced by the default",
                    "point ALFWORLD_DATA at the folder holding json_2.1.1/ (e.g. ../shared/alfworld), or unset it",
                )
        try:
            root = resolve_data_root(self.data_root)
        except FileNotFoundError as err:
            fix = "set RLANYTHING_DATA (the folder holding alfworld/), ALFWORLD_DATA or setting.data_root"
            raise SettingError("data_root", str(err), fix) from err
        splits = {"train_split": self.train_split, **{f"eval_splits.{k}": v for k, v in self.eval_splits.items()}}
        for param, split in splits.items():
            try:
                games = list_games(split, root, task_types=tuple(self.task_types))
            except (FileNotFoundError, ValueError) as err:
                raise SettingError(
                    param,
                    f"split {split!r} cannot be read: {err}",
                    "choose one of valid_train, valid_seen, valid_unseen, train",
                ) from err
            if not games:
                raise SettingError(
                    param,
                    f"split {split!r} has no games for task types {list(self.task_types)}",
                    "widen setting.task_types or choose another split",
                )
        self.games()  # the pool's size against the games the split holds outside the evaluation

    def games(self) -> tuple[list[AlfworldGame], dict[str, list[AlfworldGame]], Path]:
        """``(training games, evaluation games per split, data root)``, read once per instance.

        Raises:
            SettingError: ``train_games`` asks for more games than the training split holds outside the evaluation.
        """
        return self._games

    @cached_property
    def _games(self) -> tuple[list[AlfworldGame], dict[str, list[AlfworldGame]], Path]:
        """See :meth:`games` (the roots and the splits read the same listing)."""
        root = resolve_data_root(self.data_root)
        types = tuple(self.task_types)
        evals = {k: self._eval_games(list_games(v, root, task_types=types)) for k, v in self.eval_splits.items()}
        train = self._train_games(list_games(self.train_split, root, task_types=types), evals)
        return train, evals, root

    def roots(self) -> list[TaskSpec]:
        """The training games as pool roots (their game file in ``data``)."""
        return [
            TaskSpec(task_id=game_id(g.game_file), kind="alfworld", root_id=game_id(g.game_file),
                     data={"game_file": str(g.game_file)})
            for g in self.games()[0]
        ]  # fmt: skip

    def splits(self) -> list[EvalSplit]:
        """One split per ``eval_splits`` entry: its games' files, named by :func:`game_id`."""
        return [
            EvalSplit(k, tuple(str(g.game_file) for g in games), tuple(game_id(g.game_file) for g in games))
            for k, games in self.games()[1].items()
        ]

    def env_factory(self, max_steps: int) -> AlfworldEnvFactory:
        """ALFWorld environments of ``max_steps`` actions."""
        return AlfworldEnvFactory(max_episode_steps=max_steps, max_idle_engines=self.max_idle_engines)

    def to_env_task(self, task: TaskSpec) -> str:
        """See :func:`alfworld_env_task`."""
        return alfworld_env_task(task)

    def step_oracle(self) -> StepOracle:
        """The planner's labels (:func:`alfworld_oracle`), stored on disk unless ``label_store`` is off."""
        if not self.label_store:
            return alfworld_oracle
        folder = Path(self.label_store_dir).expanduser() if self.label_store_dir else cache_dir("planner_labels")
        # the version names this function's reading of the labels too (+1 progress, -1 otherwise)
        return StoredLabels(alfworld_oracle, folder, version=f"{planner_version()}:progress+1", task_key=file_digest)

    def step_labeller(self) -> AlfworldExpertLabeller:
        """The step records' cheap exact label: the hand-coded expert's next command (``expert_agreement``)."""
        return AlfworldExpertLabeller()

    def _train_games(self, games: list[AlfworldGame], evals: dict[str, list[AlfworldGame]]) -> list[AlfworldGame]:
        """The training pool: ``train_games`` of the training split's games drawn like the evaluation games.

        Every task type in proportion (seed ``train_sample_seed``), never a game the evaluation plays (the same
        ``<task folder>/<trial folder>``): the split's first games are sorted by type, so a prefix of 32 held only
        two of the six types the evaluation measures.
        """
        evaluated = {game_id(g.game_file) for split in evals.values() for g in split}
        candidates = [g for g in games if game_id(g.game_file) not in evaluated]
        n = len(candidates) if self.train_games is None else int(self.train_games)
        if n > len(candidates):
            raise SettingError(
                "train_games",
                f"{n} games asked, but {self.train_split} holds {len(candidates)} outside the evaluation games",
                f"set setting.train_games <= {len(candidates)} or null",
            )
        return stratified_sample(candidates, n, stratum=lambda g: g.task_type, seed=int(self.train_sample_seed))

    def _eval_games(self, games: list[AlfworldGame]) -> list[AlfworldGame]:
        """``eval_games`` of a split's games, every task type in proportion, drawn by ``eval_sample_seed``.

        The same games for every arm and training seed: the ablation's statistics are paired by game.
        """
        n = len(games) if self.eval_games is None else min(int(self.eval_games), len(games))  # None: the whole split
        return stratified_sample(games, n, stratum=lambda g: g.task_type, seed=int(self.eval_sample_seed))


def alfworld_env_task(task: TaskSpec) -> str:
    """What an ALFWorld environment is built from: the pool task's game file."""
    return str(task.data["game_file"])


def alfworld_oracle(game_file: Any, actions: list[str]) -> list[int]:
    """The planner's label of each step of ``actions`` in ``game_file``: +1 progress, -1 otherwise."""
    return [1 if s.label is StepLabel.PROGRESS else -1 for s in label_trajectory(game_file, actions)]


def game_id(game_file: Path) -> str:
    """``<task folder>/<trial folder>`` of an ALFWorld game file."""
    return f"{game_file.parent.parent.name}/{game_file.parent.name}"


def training_pool_summary(train: list[AlfworldGame]) -> dict[str, Any]:
    """What the run's metadata records about the training pool: its size, games per task type, the game ids."""
    per_type: dict[str, int] = {}
    for g in train:
        per_type[g.task_type] = per_type.get(g.task_type, 0) + 1
    ids = [game_id(g.game_file) for g in train]
    return {"games": len(train), "per_type": dict(sorted(per_type.items())), "ids": ids}
