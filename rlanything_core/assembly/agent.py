"""The agent settings (ALFWorld, TextWorld, MiniWoB++, desktop) on the one builder: their parts, driver and evaluator.

:func:`agent_setting` is what an agent setting's yaml names under ``setting.parts`` (``setting.py``): it turns
the setting's own parts (``setting.parts.environment``, an ``AgentTasks`` of ``rlanything_core.settings``, built from
plain values) into a :class:`~rlanything_core.assembly.setting.Setting`: the environments in ``setting.env_workers``
worker processes (:func:`shared_env_pool`: one pool per factory in a process), the rewriter ``rewriters[<name>]``,
the setting's checks raising ``ConfigError`` with the config key.
:func:`agent_loop` is the ``loop`` part: the policy acts in the setting's environments (``Tasks.runner``), the judge
votes on its steps, the pool's tasks are rewritten; the evaluator plays ``Tasks.splits`` on ``Tasks.eval_runner``,
sharded over the ranks (a pass-through in one process). :func:`alfworld_games` reads the games of a config's
ALFWorld setting (``experiments/ablate.py`` records its training pool).
"""

from __future__ import annotations

import atexit
import inspect
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from rlanything_core.adaptation.llm import BackendChatModel
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.assembly import components
from rlanything_core.assembly.checks import band
from rlanything_core.assembly.setting import (
    BACKENDS,
    ENVIRONMENT,
    LoopParts,
    Setting,
    Tasks,
    check_parts,
    load_setting,
)
from rlanything_core.collect.agent import AgentCollector, SequentialRunner
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.collect.prompts import agent_messages, judge_messages
from rlanything_core.config import ConfigError
from rlanything_core.envs.alfworld.data import AlfworldGame
from rlanything_core.envs.miniwob.pool import BrowserEnvPool
from rlanything_core.envs.parallel import EnvPool
from rlanything_core.loop.driver import AgentLoopDriver
from rlanything_core.loop.evaluation import AgentEvaluator
from rlanything_core.loop.sharded_evaluation import sharded_evaluator
from rlanything_core.loop.step_records import StepRecorder
from rlanything_core.loop.vote_mode import VoteMode
from rlanything_core.seeding import derive_seed
from rlanything_core.settings import AgentTasks, Runner
from rlanything_core.settings.alfworld import AlfworldTasks

__all__ = [
    "agent_loop",
    "agent_rewriter",
    "agent_setting",
    "agent_tasks",
    "alfworld_games",
    "check_environment",
    "close_shared_env_pools",
    "evaluation_episode_seed",
    "shared_env_pool",
]


def agent_setting(
    environment: AgentTasks,
    rewriter: str,
    rewriters: str = "rewriters",
    agent_prompts: Callable[..., Any] = agent_messages,
    judge_prompts: Callable[..., Any] = judge_messages,
    backends: Sequence[str] = BACKENDS,
) -> Setting:
    """The :class:`Setting` of an agent setting: ``environment``'s parts on the agent loop.

    Args:
        environment: the setting's own parts (roots, splits, environment factories, step oracle, checks).
        rewriter: the node of ``rewriters`` that rewrites its tasks (``setting.rewriter`` where the setting has a
            choice).
        rewriters: the config key of the rewriter nodes (``rewriters`` of ``train.yaml``, or the setting's own).
        agent_prompts: the policy's prompt builder.
        judge_prompts: the judge's prompt builder.
        backends: the rollout backends it runs on.

    Raises:
        ConfigError: ``environment`` is not an ``AgentTasks``.
    """
    if not isinstance(environment, AgentTasks):
        kind = type(environment).__name__
        raise ConfigError(ENVIRONMENT, f"built a {kind}, not an AgentTasks", "name a class of rlanything_core.settings")
    return Setting(
        tasks=partial(agent_tasks, environment=environment),
        rewriter=partial(agent_rewriter, name=rewriter, group=rewriters),
        loop=agent_loop,
        agent_prompts=agent_prompts,
        judge_prompts=judge_prompts,
        validate=partial(check_environment, environment=environment, rewriter=rewriter, group=rewriters),
        backends=tuple(backends),
        environment=environment,
    )


def agent_tasks(cfg: DictConfig, environment: AgentTasks) -> Tasks:
    """``environment``'s roots, splits and environments, run as its ``runner`` says.

    Its training environments stop at ``setting.max_steps`` actions, its evaluation ones at ``setting.eval_max_steps``.
    """
    runner, eval_runner = _runners(cfg, environment)
    return Tasks(
        roots=environment.roots(),
        splits=environment.splits(),
        runner=runner,
        eval_runner=eval_runner,
        to_env_task=environment.to_env_task,
        oracle=environment.step_oracle(),
        # optional in the AgentTasks protocol: only a setting with a cheap exact reference agent has one
        step_labeller=getattr(environment, "step_labeller", lambda: None)(),
    )


def _runners(cfg: DictConfig, environment: AgentTasks) -> tuple[Any, Any]:
    """``(training runner, evaluation runner)`` of ``environment`` (:class:`~rlanything_core.settings.Runner`).

    ``setting.env_workers`` worker processes (shared by the runs of one process), or in this process.
    """
    steps, eval_steps = int(cfg.setting.max_steps), int(cfg.setting.eval_max_steps)
    workers = int(cfg.setting.env_workers)
    if environment.runner is Runner.BROWSERS:  # one pool, its browsers shared: each collector stops at its own limit
        pool = shared_env_pool(environment.env_factory(max(steps, eval_steps)), max(1, workers), kind="browser")
        return pool, pool
    in_process = environment.runner is Runner.IN_PROCESS or workers <= 1
    run: Callable[[Any], Any] = SequentialRunner if in_process else partial(shared_env_pool, workers=workers)
    return run(environment.env_factory(steps)), run(environment.env_factory(eval_steps))


def agent_rewriter(
    cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec], *, name: str, group: str = "rewriters"
) -> Any:
    """The rewriter ``<group>[name]``, given what its parameters ask of the run.

    ``chat_model``: the judge's LM; ``out_dir``: the run's ``candidates/`` folder. ``roots`` are the pool's (the agent
    rewriters read a task, not the pool).

    Raises:
        ConfigError: the rewriter needs the judge's LM, and the arm has no judge.
    """
    node = components.variant(cfg, group, name, "setting.rewriter")
    params = _rewriter_parameters(node)
    runtime: dict[str, Any] = {}
    if "chat_model" in params:
        if judge_backend is None:
            raise _needs_judge(name)
        runtime["chat_model"] = BackendChatModel(judge_backend)
    if "out_dir" in params:
        runtime["out_dir"] = run_dir / "candidates"
    return components.rewriter(cfg, name, group=group, **runtime)


def _rewriter_parameters(node: DictConfig) -> frozenset[str]:
    """The parameters a rewriter node's target still awaits (what the run must give it)."""
    return frozenset(inspect.signature(instantiate(node, _partial_=True)).parameters)


def _needs_judge(name: str) -> ConfigError:
    """The error of a rewriter that proposes with the judge's LM, in a run without a judge."""
    fix = "set setting.rewriter=rules"
    return ConfigError("setting.rewriter", f"the {name!r} rewriter uses the judge's model", fix)


def check_environment(
    cfg: DictConfig, environment: AgentTasks, rewriter: str = "rules", group: str = "rewriters"
) -> None:
    """Check an agent setting before any work.

    Its own checks (a :class:`SettingError` becomes a ``ConfigError`` naming the config key), its rewriter (known;
    with the judge's LM where it needs one), its runner's workers.
    """
    check_parts(cfg, environment)
    node = components.variant(cfg, group, rewriter, "setting.rewriter")
    adapts_without_judge = bool(cfg.arm.adapt_environment) and not bool(cfg.arm.use_judge)
    if adapts_without_judge and "chat_model" in _rewriter_parameters(node):
        raise _needs_judge(rewriter)
    if environment.runner is Runner.IN_PROCESS and int(cfg.setting.env_workers) != 1:
        raise ConfigError("setting.env_workers", f"{cfg.setting.name} episodes share what runs in this process",
                          "set it to 1")  # fmt: skip


def agent_loop(parts: LoopParts) -> tuple[Any, Any]:
    """``(AgentLoopDriver, evaluator)`` of an agent setting (see the module docstring)."""
    cfg, tasks = parts.cfg, parts.tasks
    if tasks.to_env_task is None:  # agent_tasks always sets it; a Tasks built by hand may not
        raise ValueError("Tasks.to_env_task: the agent loop needs how a pool task becomes an environment's task")
    judge_collector = _judge_collector(parts)
    collector = _collector(parts, tasks.runner, float(cfg.model.temperature), int(cfg.group_size),
                           int(cfg.setting.max_steps), progress=bool(cfg.progress))  # fmt: skip
    driver = AgentLoopDriver(
        collector=collector,
        judge=judge_collector,
        integrator=instantiate(cfg.arm.integrator),
        judge_targets=components.judge_targets(cfg),
        pool=parts.pool,
        to_env_task=tasks.to_env_task,
        adaptation=parts.adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=parts.pad_id,
        step_reward=instantiate(cfg.step_reward),  # one R for the integrator and the judge
        policy_band=band(cfg, "policy_band"),
        judge_band=band(cfg, "judge_band"),
        # opt-in keys (absent from the shipped configs, so that the resolved configs of earlier runs stay equal):
        # arm.vote_mode (an experiment's arm: rlanything_core/conf/arm/e2_expected_vote.yaml); +step_records=false
        vote_mode=_vote_mode(cfg),
        recorder=StepRecorder(parts.pool.run_dir, tasks.step_labeller)
        if OmegaConf.select(cfg, "step_records", default=True) else None,
    )
    eval_collector = _collector(parts, tasks.eval_runner, float(cfg.eval.temperature), int(cfg.eval.runs),
                                int(cfg.setting.eval_max_steps),
                                progress="evaluation" if cfg.progress else False)  # fmt: skip
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
        # opt-in (+eval.oracle_deadline_s=60): absent from the shipped configs, so that adding it did not change the
        # resolved config of the runs made before (ablation/reuse.py copies a finished run only when equal)
        oracle_deadline_s=OmegaConf.select(cfg, "eval.oracle_deadline_s", default=None),
    )
    return driver, sharded_evaluator(evaluator)


def _collector(parts: LoopParts, runner: Any, temperature: float, group_size: int, max_steps: int, *,
               progress: bool | str) -> AgentCollector:  # fmt: skip
    """The policy's collector on ``runner``, prompted by the setting's prompt builder."""
    cfg = parts.cfg
    return AgentCollector(
        parts.policy_backend,
        runner,
        components.selector(cfg, temperature),
        group_size=group_size,
        max_steps=max_steps,
        max_history_turns=int(cfg.setting.max_history_turns),
        progress=progress,
        prompt_builder=parts.setting.agent_prompts,
    )


def _judge_collector(parts: LoopParts) -> JudgeCollector | None:
    """The judge's voter, prompted by the setting's prompt builder; ``None`` without a judge."""
    if parts.judge_backend is None:
        return None
    cfg = parts.cfg
    votes = components.vote_sampler(cfg)
    bind_tasks = getattr(votes, "bind_tasks", None)  # a judge that reads the game itself (collect.expert_judge)
    if callable(bind_tasks):
        bind_tasks(_game_of(parts))
    return JudgeCollector(
        parts.judge_backend,
        num_votes=_num_votes(cfg),
        votes=votes,
        prompt_builder=parts.setting.judge_prompts,
    )


def _num_votes(cfg: DictConfig) -> int:
    """``m``: the arm's ``num_votes`` where it sets one (an experiment's arm), else the top-level ``num_votes``.

    In the arm so that ``ablate.py``, which forwards the top-level ``num_votes`` to every arm, runs it beside the
    other arms unchanged.
    """
    return int(OmegaConf.select(cfg, "arm.num_votes", default=None) or cfg.num_votes)


def _game_of(parts: LoopParts) -> Callable[[str], Any]:
    """``task id -> environment task`` of the pool's tasks (rewrites included, read when asked) and the evaluation's."""
    evaluated = {i: t for split in parts.tasks.splits for i, t in zip(split.task_ids, split.tasks)}
    to_env_task = parts.tasks.to_env_task
    assert to_env_task is not None

    def game_of(task_id: str) -> Any:
        task = parts.pool.tasks.get(task_id)
        if task is not None:
            return to_env_task(task)
        if task_id in evaluated:
            return evaluated[task_id]
        raise ValueError(f"task_id: {task_id!r} is neither a pool task nor an evaluation task")

    return game_of


def _vote_mode(cfg: DictConfig) -> VoteMode:
    """``arm.vote_mode`` (``loop.vote_mode.VoteMode``, built by Hydra), or the paper's sampled votes where absent."""
    node = OmegaConf.select(cfg, "arm.vote_mode", default=None)
    mode = VoteMode.SAMPLED if node is None else instantiate(node)
    if not isinstance(mode, VoteMode):
        raise ConfigError("arm.vote_mode", f"expected a VoteMode, got {mode!r}",
                          "{_target_: rlanything_core.loop.vote_mode.VoteMode, _args_: [expected]}")  # fmt: skip
    return mode


def evaluation_episode_seed(cfg: DictConfig) -> int:
    """The seed of the evaluation episodes: one per training seed (``eval.per_seed_episodes``), else ``eval.seed``.

    Per training seed, every arm of that seed plays the same episodes (paired), and the seeds are independent draws:
    with one draw for all, every seed's "before" row is the same sample and its noise is counted once, not per seed.
    """
    base = int(cfg.eval.seed)
    return derive_seed(base, "episodes", int(cfg.seed)) if cfg.eval.get("per_seed_episodes", False) else base


_SHARED_POOLS: dict[tuple[Any, int], Any] = {}
atexit.register(lambda: close_shared_env_pools())


def shared_env_pool(factory: Any, workers: int, *, kind: str = "text") -> Any:
    """One :class:`EnvPool` per ``(factory, workers)`` in this process, reused by every run built here.

    ``ablate.py`` runs all arms and seeds in one process: sharing the pools spares a worker start per run, and each
    worker keeps its loaded games (ALFWorld's idle-engine cache), so a game is parsed once for the whole ablation.
    Runs are sequential, and every collection starts a new batch, so sharing does not couple them.
    ``kind="browser"``: workers that own browsers (MiniWoB++), killed with their whole process group.
    """
    key = (factory, workers)
    if key not in _SHARED_POOLS:
        if kind == "browser":
            _SHARED_POOLS[key] = BrowserEnvPool(factory, num_workers=workers)
        else:
            _SHARED_POOLS[key] = EnvPool(factory, num_workers=workers)
    return _SHARED_POOLS[key]


def close_shared_env_pools() -> None:
    """Stop the workers of every shared pool."""
    for pool in _SHARED_POOLS.values():
        pool.close()
    _SHARED_POOLS.clear()


def alfworld_games(cfg: DictConfig) -> tuple[list[AlfworldGame], dict[str, list[AlfworldGame]], object]:
    """``(training games, evaluation games per split, data root)`` of ``cfg``'s ALFWorld setting.

    Raises:
        ConfigError: ``cfg``'s setting is not ALFWorld, or its checks fail (naming the key).
    """
    environment = load_setting(cfg).environment
    if not isinstance(environment, AlfworldTasks):
        raise ConfigError(ENVIRONMENT, "this setting is not ALFWorld", "use +setting=alfworld")
    check_environment(cfg, environment)
    return environment.games()
