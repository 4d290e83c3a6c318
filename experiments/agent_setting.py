"""The agent settings (ALFWorld, TextWorld): their tasks and environments, then the loop driver and the evaluator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.backends import prepare, rollout_backends, rollout_context
from experiments.config_checks import band
from experiments.env_pools import shared_env_pool
from experiments.trainer_setup import Run, make_module, make_run

__all__ = [
    "AgentTasks",
    "alfworld_games",
    "alfworld_tasks",
    "build_agent",
    "env_task",
    "evaluation_episode_seed",
    "game_id",
    "loop_driver",
    "textworld_spec",
    "textworld_tasks",
    "training_pool_summary",
]


@dataclass
class AgentTasks:
    """What differs between the agent settings: the pool's root tasks, the environments, the evaluation splits."""

    roots: list[Any]
    factory: Any  # training environments (max_steps)
    eval_factory: Any  # evaluation environments (eval_max_steps)
    splits: list[Any]  # EvalSplit per evaluation split
    oracle: Any  # step labels for the judge's process accuracy (ALFWorld's planner), or None
    module_cls: Any


def build_agent(cfg: DictConfig) -> Run:
    """The agent loop: the policy acts, the judge votes on its steps, the environment's tasks are rewritten."""
    from rlanything_core.lightning import RolloutDataModule

    run_dir, policy, judge, tokenizer, pad_id = prepare(cfg)
    policy_backend, judge_backend = rollout_backends(cfg, policy, judge, tokenizer)
    tasks = alfworld_tasks(cfg) if cfg.setting.name == "alfworld" else textworld_tasks(cfg)
    judge_collector = _judge_collector(cfg, judge_backend)
    judge_loss = components.judge_loss(cfg)
    driver = _driver(cfg, run_dir, tasks, policy_backend, judge_backend, judge_collector, pad_id)
    evaluator = _evaluator(cfg, tasks, policy_backend, judge_collector)
    module = make_module(cfg, tasks.module_cls, policy, judge, judge_loss, evaluator)
    module.rollout_context = rollout_context(cfg, [(policy, policy_backend), (judge, judge_backend)])
    return make_run(cfg, run_dir, module, RolloutDataModule(driver, iterations=int(cfg.iterations)))


def _runner(cfg: DictConfig, factory: Any) -> Any:
    from rlanything_core.collect.agent import SequentialRunner

    workers = int(cfg.setting.env_workers)
    return shared_env_pool(factory, workers) if workers > 1 else SequentialRunner(factory)


def _judge_collector(cfg: DictConfig, judge_backend: Any) -> Any:
    from rlanything_core.collect.judge import JudgeCollector

    if judge_backend is None:
        return None
    return JudgeCollector(judge_backend, num_votes=int(cfg.num_votes), votes=components.vote_sampler(cfg))


def _driver(
    cfg: DictConfig,
    run_dir: Path,
    tasks: AgentTasks,
    policy_backend: Any,
    judge_backend: Any,
    judge_collector: Any,
    pad_id: int,
) -> Any:
    """The training loop's driver: collect, judge, integrate, adapt the environment."""
    from rlanything_core.collect.agent import AgentCollector
    from rlanything_core.loop.adaptation import EnvironmentAdaptation

    collector = AgentCollector(
        policy_backend,
        _runner(cfg, tasks.factory),
        components.selector(cfg, float(cfg.model.temperature)),
        group_size=int(cfg.group_size),
        max_steps=int(cfg.setting.max_steps),
        max_history_turns=int(cfg.setting.max_history_turns),
        progress=bool(cfg.progress),
    )
    adaptation = None
    if cfg.arm.adapt_environment:
        rewriter = _rewriter(cfg, run_dir, judge_backend)
        adaptation = EnvironmentAdaptation(rewriter, max_requests=int(cfg.max_rewrites_per_iteration))
    pool = components.task_pool(cfg, run_dir, tasks.roots)
    return loop_driver(cfg, collector, judge_collector, pool, env_task, adaptation, pad_id)


def loop_driver(
    cfg: DictConfig,
    collector: Any,
    judge_collector: Any,
    pool: Any,
    to_env_task: Any,
    adaptation: Any,
    pad_id: int,
) -> Any:
    """The ``AgentLoopDriver`` of every agent setting (text, GUI, desktop): the parts, plus the config's scalars."""
    from rlanything_core.loop.driver import AgentLoopDriver

    return AgentLoopDriver(
        collector=collector,
        judge=judge_collector,
        integrator=components.integrator(cfg),
        judge_targets=components.judge_targets(cfg),
        pool=pool,
        to_env_task=to_env_task,
        adaptation=adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=pad_id,
        step_reward=components.step_reward(cfg),
        policy_band=band(cfg, "policy_band"),
        judge_band=band(cfg, "judge_band"),
    )


def _evaluator(cfg: DictConfig, tasks: AgentTasks, policy_backend: Any, judge_collector: Any) -> Any:
    """The evaluator over ``tasks.splits``, sharded over the ranks (a pass-through in one process)."""
    from rlanything_core.collect.agent import AgentCollector
    from rlanything_core.loop.evaluation import AgentEvaluator
    from rlanything_core.loop.sharded_evaluation import sharded_evaluator

    eval_collector = AgentCollector(
        policy_backend,
        _runner(cfg, tasks.eval_factory),
        components.selector(cfg, float(cfg.eval.temperature)),
        group_size=int(cfg.eval.runs),
        max_steps=int(cfg.setting.eval_max_steps),
        max_history_turns=int(cfg.setting.max_history_turns),
    )
    evaluator = AgentEvaluator(
        eval_collector,
        tasks.splits,
        judge=judge_collector,
        oracle=tasks.oracle,
        oracle_episodes=int(cfg.eval.oracle_episodes),
        seed=int(cfg.eval.seed),  # the judge's probe set: the same for every arm and seed
        episode_seed=evaluation_episode_seed(cfg),
        judge_episodes=None if cfg.eval.judge_episodes is None else int(cfg.eval.judge_episodes),
        probe_file=cfg.eval.get("probe_file"),
    )
    return sharded_evaluator(evaluator)


def evaluation_episode_seed(cfg: DictConfig) -> int:
    """The seed of the evaluation episodes: one per training seed (``eval.per_seed_episodes``), else ``eval.seed``.

    Per training seed, every arm of that seed plays the same episodes (paired), and the seeds are independent draws:
    with one draw for all, every seed's "before" row is the same sample and its noise is counted once, not per seed.
    """
    from rlanything_core.seeding import derive_seed

    base = int(cfg.eval.seed)
    return derive_seed(base, "episodes", int(cfg.seed)) if cfg.eval.get("per_seed_episodes", False) else base


def _rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any) -> Any:
    """``rewriters[setting.rewriter]`` (ALFWorld: rules or the judge's LM), ``rewriters.textworld`` (TextWorld)."""
    if cfg.setting.name != "alfworld":
        return components.rewriter(cfg, "textworld")
    name = str(cfg.setting.rewriter)
    if name == "rules":
        return components.rewriter(cfg, name, out_dir=run_dir / "candidates")
    from rlanything_core.environment.llm import BackendChatModel

    if judge_backend is None:
        from experiments.config_checks import ConfigError

        raise ConfigError("setting.rewriter", "the LLM rewriter uses the judge's model", "set setting.rewriter=rules")
    return components.rewriter(cfg, name, chat_model=BackendChatModel(judge_backend), out_dir=run_dir / "candidates")


# ---------------------------------------------------------------------------------------------------------- ALFWorld
def alfworld_tasks(cfg: DictConfig) -> AgentTasks:
    """ALFWorld: the training split's games as pool roots, the evaluation splits, the planner as step oracle."""
    from rlanything_core.environment.rewriters.protocol import TaskSpec
    from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
    from rlanything_core.envs.alfworld.oracle import StepLabel, label_trajectory
    from rlanything_core.lightning import ALFWorldModule
    from rlanything_core.loop.evaluation import EvalSplit

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

    def oracle(game_file: Any, actions: list[str]) -> list[int]:
        return [1 if s.label is StepLabel.PROGRESS else -1 for s in label_trajectory(game_file, actions)]

    return AgentTasks(
        roots=roots,
        factory=AlfworldEnvFactory(max_episode_steps=int(cfg.setting.max_steps)),
        eval_factory=AlfworldEnvFactory(max_episode_steps=int(cfg.setting.eval_max_steps)),
        splits=splits,
        oracle=oracle,
        module_cls=ALFWorldModule,
    )


def alfworld_games(cfg: DictConfig) -> tuple[list[Any], dict[str, list[Any]], Any]:
    """``(training games, evaluation games per split, data root)``."""
    from rlanything_core.envs.alfworld.data import list_games, resolve_data_root

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
    from experiments.config_checks import ConfigError
    from rlanything_core.envs.alfworld.sampling import stratified_sample

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
    from rlanything_core.envs.alfworld.sampling import stratified_sample

    n = len(games) if cfg.eval.games is None else min(int(cfg.eval.games), len(games))  # null: the whole split
    return stratified_sample(games, n, stratum=lambda g: g.task_type, seed=int(cfg.eval.sample_seed))


def game_id(game_file: Path) -> str:
    """``<task folder>/<trial folder>`` of an ALFWorld game file."""
    return f"{game_file.parent.parent.name}/{game_file.parent.name}"


# ---------------------------------------------------------------------------------------------------------- TextWorld
def textworld_tasks(cfg: DictConfig) -> AgentTasks:
    """TextWorld: generated games on a grid of (rooms, quest length) cells; one evaluation split per quest length."""
    from rlanything_core.environment.rewriters.protocol import TaskSpec
    from rlanything_core.envs.textworld_games import TextWorldEnvFactory
    from rlanything_core.lightning import TextWorldModule
    from rlanything_core.loop.evaluation import EvalSplit

    st = cfg.setting
    cache = None if st.cache_dir is None else str(st.cache_dir)
    roots = []
    for rooms in st.train_rooms:
        for quest in st.train_quest_lengths:
            for k in range(int(st.seeds_per_cell)):
                params = {
                    "nb_rooms": int(rooms),
                    "nb_objects": int(st.nb_objects),
                    "quest_length": int(quest),
                    "seed": 100 * k + 10 * int(rooms) + int(quest),
                }
                task_id = "tw-r{nb_rooms}-o{nb_objects}-q{quest_length}-s{seed}".format(**params)
                roots.append(TaskSpec(task_id=task_id, kind="textworld", root_id=task_id, data=params))
    splits = []
    for quest in st.eval_quest_lengths:
        specs = [
            textworld_spec(
                {"nb_rooms": int(st.eval_rooms), "nb_objects": int(st.nb_objects), "quest_length": int(quest),
                 "seed": 777_000 + k}
            )
            for k in range(int(cfg.eval.games))
        ]  # fmt: skip
        splits.append(EvalSplit(f"quest_{quest}", tuple(specs), tuple(s.key for s in specs)))
    return AgentTasks(
        roots=roots,
        factory=TextWorldEnvFactory(max_episode_steps=int(st.max_steps), cache_dir=cache),
        eval_factory=TextWorldEnvFactory(max_episode_steps=int(st.eval_max_steps), cache_dir=cache),
        splits=splits,
        oracle=None,
        module_cls=TextWorldModule,
    )


def textworld_spec(params: dict[str, Any]) -> Any:
    """The generator spec of a TextWorld task's parameters."""
    from rlanything_core.envs.textworld_games import TextWorldChallenge, TextWorldSpec

    return TextWorldSpec(
        challenge=TextWorldChallenge.CUSTOM,
        world_size=int(params["nb_rooms"]),
        nb_objects=int(params["nb_objects"]),
        quest_length=int(params["quest_length"]),
        seed=int(params["seed"]),
    )


def env_task(task: Any) -> Any:
    """What an environment is built from: the game file (ALFWorld) or the generator spec (TextWorld)."""
    return task.data["game_file"] if task.kind == "alfworld" else textworld_spec(task.data)
