"""``+setting=alfworld``: the training split's games as the pool, two evaluation splits, the planner as step oracle.

The parts ``experiments/conf/setting/alfworld.yaml`` names (``experiments/setting.py``): :func:`alfworld_tasks`,
:func:`alfworld_rewriter` and :func:`validate_alfworld`; the loop is the agent loop (``experiments/agent_loop.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.agent_loop import worker_runner
from experiments.config_error import ConfigError
from experiments.setting import Tasks
from rlanything_core.environment.llm import BackendChatModel
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.alfworld.data import list_games, resolve_data_root
from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
from rlanything_core.envs.alfworld.oracle import StepLabel, label_trajectory
from rlanything_core.envs.alfworld.sampling import stratified_sample
from rlanything_core.loop.evaluation import EvalSplit

__all__ = [
    "alfworld_env_task",
    "alfworld_games",
    "alfworld_oracle",
    "alfworld_rewriter",
    "alfworld_tasks",
    "game_id",
    "training_pool_summary",
    "validate_alfworld",
]


def alfworld_tasks(cfg: DictConfig) -> Tasks:
    """The training split's games as pool roots, the evaluation splits, the planner as step oracle."""
    train, evals, _ = alfworld_games(cfg)
    roots = [
        TaskSpec(task_id=game_id(g.game_file), kind="alfworld", root_id=game_id(g.game_file),
                 data={"game_file": str(g.game_file)})
        for g in train
    ]  # fmt: skip
    splits = [
        EvalSplit(k, tuple(str(g.game_file) for g in games), tuple(game_id(g.game_file) for g in games))
        for k, games in evals.items()
    ]
    return Tasks(
        roots=roots,
        splits=splits,
        runner=worker_runner(cfg, AlfworldEnvFactory(max_episode_steps=int(cfg.setting.max_steps))),
        eval_runner=worker_runner(cfg, AlfworldEnvFactory(max_episode_steps=int(cfg.setting.eval_max_steps))),
        to_env_task=alfworld_env_task,
        oracle=alfworld_oracle,
    )


def alfworld_env_task(task: TaskSpec) -> str:
    """What an ALFWorld environment is built from: the pool task's game file."""
    return str(task.data["game_file"])


def alfworld_oracle(game_file: Any, actions: list[str]) -> list[int]:
    """The planner's label of each step of ``actions`` in ``game_file``: +1 progress, -1 otherwise."""
    return [1 if s.label is StepLabel.PROGRESS else -1 for s in label_trajectory(game_file, actions)]


def alfworld_rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]) -> Any:
    """``rewriters[setting.rewriter]``: the rule-based goal swap, or the judge's LM proposing it (``llm``)."""
    name = str(cfg.setting.rewriter)
    if name == "rules":
        return components.rewriter(cfg, name, out_dir=run_dir / "candidates")
    if judge_backend is None:
        raise ConfigError("setting.rewriter", "the LLM rewriter uses the judge's model", "set setting.rewriter=rules")
    return components.rewriter(cfg, name, chat_model=BackendChatModel(judge_backend), out_dir=run_dir / "candidates")


def alfworld_games(cfg: DictConfig) -> tuple[list[Any], dict[str, list[Any]], Any]:
    """``(training games, evaluation games per split, data root)``."""
    root = resolve_data_root(cfg.setting.data_root)
    types = tuple(cfg.setting.task_types)
    evals = {k: _eval_games(cfg, list_games(v, root, task_types=types)) for k, v in cfg.setting.eval_splits.items()}
    train = _train_games(cfg, list_games(cfg.setting.train_split, root, task_types=types), evals)
    return train, evals, root


def _train_games(cfg: DictConfig, games: list[Any], evals: dict[str, list[Any]]) -> list[Any]:
    """The training pool: ``setting.train_games`` of the training split's games drawn like the evaluation games.

    Every task type in proportion (``stratified_sample``, seed ``setting.train_sample_seed``), never a game the
    evaluation plays (the same ``<task folder>/<trial folder>``): the split's first games are sorted by type, so a
    prefix of 32 held only two of the six types the evaluation measures (issue 27).
    """
    evaluated = {game_id(g.game_file) for split in evals.values() for g in split}
    candidates = [g for g in games if game_id(g.game_file) not in evaluated]
    wanted = cfg.setting.train_games
    n = len(candidates) if wanted is None else int(wanted)
    if n > len(candidates):
        raise ConfigError(
            "setting.train_games",
            f"{n} games asked, but {cfg.setting.train_split} holds {len(candidates)} outside the evaluation games",
            f"set setting.train_games <= {len(candidates)} or null",
        )
    seed = int(cfg.setting.get("train_sample_seed", 0))
    return stratified_sample(candidates, n, stratum=lambda g: g.task_type, seed=seed)


def training_pool_summary(train: list[Any]) -> dict[str, Any]:
    """What the run's metadata records about the training pool: its size, games per task type, the game ids."""
    per_type: dict[str, int] = {}
    for g in train:
        per_type[g.task_type] = per_type.get(g.task_type, 0) + 1
    ids = [game_id(g.game_file) for g in train]
    return {"games": len(train), "per_type": dict(sorted(per_type.items())), "ids": ids}


def _eval_games(cfg: DictConfig, games: list[Any]) -> list[Any]:
    """``eval.games`` of a split's games, every task type in proportion, drawn by ``eval.sample_seed`` (the same
    games for every arm and training seed: the ablation's statistics are paired by game)."""
    n = len(games) if cfg.eval.games is None else min(int(cfg.eval.games), len(games))  # null: the whole split
    return stratified_sample(games, n, stratum=lambda g: g.task_type, seed=int(cfg.eval.sample_seed))


def game_id(game_file: Path) -> str:
    """``<task folder>/<trial folder>`` of an ALFWorld game file."""
    return f"{game_file.parent.parent.name}/{game_file.parent.name}"


def validate_alfworld(cfg: DictConfig) -> None:
    """The data root holds the games, and every split named (training, evaluation) has games of the task types."""
    explicit = os.environ.get("ALFWORLD_DATA")
    # `import alfworld` sets ALFWORLD_DATA to its own (empty) cache when unset: only another value is the user's
    if cfg.setting.data_root is None and explicit and Path(explicit).expanduser() != Path.home() / ".cache/alfworld":
        path = Path(explicit).expanduser()
        if not ((path / "json_2.1.1").is_dir() or (path / "train.tar.gz").is_file()):
            raise ConfigError(
                "ALFWORLD_DATA",
                f"the environment variable is set to {explicit!r}, which holds no ALFWorld games (json_2.1.1/ or "
                "train.tar.gz); an explicit setting is never replaced by the default",
                "point ALFWORLD_DATA at the folder holding json_2.1.1/ (e.g. ../shared/alfworld), or unset it",
            )
    try:
        root = resolve_data_root(cfg.setting.data_root)
    except FileNotFoundError as err:
        raise ConfigError("setting.data_root", str(err), "set ALFWORLD_DATA or setting.data_root") from err
    splits = {"setting.train_split": cfg.setting.train_split}
    splits.update({f"setting.eval_splits.{k}": v for k, v in cfg.setting.eval_splits.items()})
    for key, split in splits.items():
        try:
            games = list_games(split, root, task_types=tuple(cfg.setting.task_types))
        except (FileNotFoundError, ValueError) as err:
            raise ConfigError(
                key,
                f"split {split!r} cannot be read: {err}",
                "choose one of valid_train, valid_seen, valid_unseen, train",
            ) from err
        if not games:
            raise ConfigError(
                key,
                f"split {split!r} has no games for task types {list(cfg.setting.task_types)}",
                "widen setting.task_types or choose another split",
            )
