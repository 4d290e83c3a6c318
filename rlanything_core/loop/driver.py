"""The data side of one RLAnything iteration for multi-turn agent settings (ALFWorld, TextWorld).

    pool.sample(k) + pending rewrites -> this rank's task groups -> AgentCollector -> JudgeCollector (m votes)
      -> build_iteration (step reward, integrator, bands, judge targets) -> IterationData
      -> outcomes (success rates, episodes) -> the loop's plan / rewrite / apply (loop.pool_sync) -> pool snapshot

Task groups are dealt to ranks round-robin by their global index and every episode is seeded by its group and
rollout (``derive_seed``), so the union over ranks is exactly what one process would collect.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from torch import Tensor

from rlanything_core.adaptation.feedback import success_rate
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.advantages.integrators import Integrator
from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.collect.agent import AgentCollector
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.loop.adaptation import EnvironmentAdaptation
from rlanything_core.loop.iteration import IterationData, build_iteration
from rlanything_core.loop.pool_sync import PoolSnapshots
from rlanything_core.loop.protocol import Outcomes, Rollouts
from rlanything_core.loop.step_records import StepRecorder
from rlanything_core.loop.vote_mode import VoteMode
from rlanything_core.records import Episode
from rlanything_core.rewards.targets import ConsistencyTargets
from rlanything_core.seeding import derive_seed

__all__ = ["AgentLoopDriver"]


class AgentLoopDriver(PoolSnapshots):
    """The data side of one iteration in stages (``loop.protocol.IterationSource``), the pool in step with checkpoints.

    Args:
        collector: plays the policy (its backend shares the trainer's policy module).
        judge: votes on every step; ``None`` for outcome-only training without a judge.
        integrator: the policy's advantages (standardizes ``step_reward`` where it uses the judge's votes).
        judge_targets: the judge's targets, built once per iteration on ``step_reward`` (their ``drop_zero_rows``
            decides whether zero-target rows train; balanced or not, ``balance_outcomes``); ``None``: the judge is
            not trained.
        pool: the task pool (its writer is rank 0).
        to_env_task: turns a pool ``TaskSpec`` into what the collector's environments are built from.
        adaptation: environment adaptation, or ``None`` to keep the tasks fixed.
        tasks_per_iteration: tasks sampled from the pool per iteration (pending rewrites come on top).
        seed: the run seed.
        pad_id: padding token of the training rows.
        step_reward: the integrated reward ``R = O + lam * mean(votes)`` (owns ``lam``), computed once per iteration
            and shared by the integrator and the judge's targets; ``None``: ``StepReward()`` (``lam = 1``).
        policy_band / judge_band: success-rate bands of the tasks whose data train the policy / the judge.
        vote_mode: what ``R``'s judge term reads (``loop.vote_mode``: the sampled votes, or the expected vote).
        recorder: writes every step's record once ``R`` and the advantages exist (``loop.step_records``); ``None``:
            no records.
    """

    def __init__(
        self,
        *,
        collector: AgentCollector,
        judge: JudgeCollector | None,
        integrator: Integrator,
        judge_targets: ConsistencyTargets | None,
        pool: TaskPool,
        to_env_task: Callable[[TaskSpec], Any],
        adaptation: EnvironmentAdaptation | None,
        tasks_per_iteration: int,
        seed: int,
        pad_id: int,
        step_reward: StepReward | None = None,
        policy_band: tuple[float, float] = (1 / 8, 7 / 8),
        judge_band: tuple[float, float] = (0.2, 0.8),
        vote_mode: VoteMode = VoteMode.SAMPLED,
        recorder: StepRecorder | None = None,
    ) -> None:
        if tasks_per_iteration < 1:
            raise ValueError(f"tasks_per_iteration: expected >= 1, got {tasks_per_iteration}")
        self.collector = collector
        self.judge_collector = judge
        self.integrator = integrator
        self.judge_targets = judge_targets
        self.pool = pool
        self.to_env_task = to_env_task
        self.adaptation = adaptation
        self.tasks_per_iteration = tasks_per_iteration
        self.seed = seed
        self.pad_id = pad_id
        self.step_reward = step_reward if step_reward is not None else StepReward()
        self.policy_band = policy_band
        self.judge_band = judge_band
        self.vote_mode = VoteMode(vote_mode)
        self.recorder = recorder

    # ------------------------------------------------------------------------------------------- one iteration
    def collect(self, iteration: int, /) -> Rollouts[Episode]:
        """This rank's task groups of iteration ``iteration``, played by the policy with the current weights."""
        tasks = self.tasks_for(iteration)
        mine = self.my_groups(len(tasks))
        if not mine:  # more ranks than task groups: nothing to roll out; still in the pool sync and the update
            return Rollouts(iteration, [])
        started = time.perf_counter()
        episodes, stats = self.collector.collect(
            [self.to_env_task(tasks[g]) for g in mine],
            seed=derive_seed(self.seed, iteration),
            task_ids=[tasks[g].task_id for g in mine],
            group_ids=mine,
        )
        metrics: dict[str, float] = {
            "action_parse_failures": float(stats.action_parse_failures),
            "env_failures": float(stats.env_failures),
            "time/rollout_s": time.perf_counter() - started,
        }
        metrics.update({f"policy_model/{k}": v for k, v in stats.model.items()})  # e.g. truncated state texts
        return Rollouts(iteration, list(episodes), metrics)

    def judge(self, rollouts: Rollouts[Episode], /) -> Rollouts[Episode]:
        """The judge's ``m`` votes on every step (unchanged without a judge or episodes)."""
        if self.judge_collector is None or not rollouts.episodes:
            return rollouts
        started = time.perf_counter()
        seed = derive_seed(self.seed, rollouts.iteration, "judge")
        episodes, jstats = self.judge_collector.judge(rollouts.episodes, seed=seed)
        metrics = {**rollouts.metrics, "judge_votes": float(jstats.votes)}
        metrics["time/judge_s"] = time.perf_counter() - started
        return Rollouts(rollouts.iteration, list(episodes), metrics)

    def rows(self, rollouts: Rollouts[Episode], /) -> IterationData:
        """Step reward, advantages, bands and judge targets of the judged episodes: the training rows.

        With a recorder, the steps' records are written here, from the rewards ``build_iteration`` computed: the
        update that follows never sees them (``time/records_s`` is their cost, the expert's replays included).
        """
        record_s: list[float] = []

        def record(step_reward: Tensor | None, advantages: Tensor) -> None:
            assert self.recorder is not None
            started = time.perf_counter()
            tasks = self.tasks_for(rollouts.iteration)  # before adapt: the iteration's tasks, as collect saw them
            self.recorder.record(rollouts.episodes, [self.to_env_task(tasks[e.group_id]) for e in rollouts.episodes],
                                 iteration=rollouts.iteration, rank=self.collectives.rank, advantages=advantages,
                                 step_reward=step_reward)  # fmt: skip
            record_s.append(time.perf_counter() - started)

        data = build_iteration(
            rollouts.episodes,
            iteration=rollouts.iteration,
            integrator=self.integrator,
            pad_id=self.pad_id,
            step_reward=self.step_reward,
            judge_targets=self.judge_targets,
            num_votes=None if self.judge_collector is None else self.judge_collector.num_votes,
            policy_band=self.policy_band,
            judge_band=self.judge_band,
            vote_mode=self.vote_mode,
            on_scored=record if self.recorder is not None else None,
        )
        if record_s:
            data.metrics["time/records_s"] = record_s[0]
        return data

    def outcomes(self, rollouts: Rollouts[Episode], /) -> Outcomes:
        """This rank's success rate of each task, and its episodes (the critic feedback is built from them)."""
        by_task: dict[str, list[Episode]] = {}
        for e in rollouts.episodes:
            by_task.setdefault(e.task_id, []).append(e)
        rates = {t: success_rate(eps) for t, eps in by_task.items()}
        return Outcomes(rollouts.iteration, rates, list(rollouts.episodes))
