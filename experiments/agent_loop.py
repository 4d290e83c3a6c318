"""The agent loop of every agent setting (ALFWorld, TextWorld, MiniWoB++, desktop): its driver and its evaluator.

``agent_loop`` is the ``loop`` part the agent settings' yamls name (``experiments/setting.py``): the policy acts in
the setting's environments (``Tasks.runner``), the judge votes on its steps, the pool's tasks are rewritten; the
evaluator plays ``Tasks.splits`` on ``Tasks.eval_runner``, sharded over the ranks (a pass-through in one process).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.config_checks import band
from experiments.env_pools import shared_env_pool
from experiments.setting import LoopParts
from rlanything_core.collect.agent import AgentCollector, SequentialRunner
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.loop.driver import AgentLoopDriver
from rlanything_core.loop.evaluation import AgentEvaluator
from rlanything_core.loop.sharded_evaluation import sharded_evaluator
from rlanything_core.seeding import derive_seed

__all__ = ["agent_loop", "evaluation_episode_seed", "loop_driver", "worker_runner"]


def worker_runner(cfg: DictConfig, factory: Any) -> Any:
    """``setting.env_workers`` worker processes over ``factory`` (shared by the runs of one process), or in-process."""
    workers = int(cfg.setting.env_workers)
    return shared_env_pool(factory, workers) if workers > 1 else SequentialRunner(factory)


def agent_loop(parts: LoopParts) -> tuple[Any, Any]:
    """``(AgentLoopDriver, evaluator)`` of an agent setting (see the module docstring)."""
    cfg, tasks = parts.cfg, parts.tasks
    judge_collector = _judge_collector(parts)
    collector = _collector(parts, tasks.runner, float(cfg.model.temperature), int(cfg.group_size),
                           int(cfg.setting.max_steps), progress=bool(cfg.progress))  # fmt: skip
    driver = loop_driver(cfg, collector, judge_collector, parts.pool, tasks.to_env_task, parts.adaptation, parts.pad_id)
    eval_collector = _collector(parts, tasks.eval_runner, float(cfg.eval.temperature), int(cfg.eval.runs),
                                int(cfg.setting.eval_max_steps), progress=False)  # fmt: skip
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
    return driver, sharded_evaluator(evaluator)


def _collector(parts: LoopParts, runner: Any, temperature: float, group_size: int, max_steps: int, *,
               progress: bool) -> AgentCollector:  # fmt: skip
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
    return JudgeCollector(
        parts.judge_backend,
        num_votes=int(cfg.num_votes),
        votes=components.vote_sampler(cfg),
        prompt_builder=parts.setting.judge_prompts,
    )


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


def evaluation_episode_seed(cfg: DictConfig) -> int:
    """The seed of the evaluation episodes: one per training seed (``eval.per_seed_episodes``), else ``eval.seed``.

    Per training seed, every arm of that seed plays the same episodes (paired), and the seeds are independent draws:
    with one draw for all, every seed's "before" row is the same sample and its noise is counted once, not per seed.
    """
    base = int(cfg.eval.seed)
    return derive_seed(base, "episodes", int(cfg.seed)) if cfg.eval.get("per_seed_episodes", False) else base
