"""``RLAnythingLoop``: the RLAnything iteration (arXiv 2602.02488, Algorithm 1) in one place, top to bottom.

    resume (weights, optimizers, counter, RNG states, update history; the pool rolled back) -> evaluate at start?
    for iteration in completed .. iterations - 1:
        rollouts = collect -> judge; data = rows (the setting's scorer)      (inside the rollout context)
        outcomes -> plan -> rewrite -> apply                                 (the pool's adaptation, collective)
        balance rows over ranks -> update policy, then judge -> completed = iteration + 1
        -> checkpoint when due -> log -> evaluate when due
    final evaluation

The loop owns the iteration counter, the source (and through it the task pool), the checkpoint and the evaluation
schedule. Devices, processes, precision, files and logs come from a ``loop.protocol.Runtime``
(``lightning/fabric_runtime.py``), each model's update from a ``loop.protocol.Update`` (``training/update.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rlanything_core.loop.iteration import IterationData, empty_iteration
from rlanything_core.loop.protocol import (
    Evaluator,
    IterationSource,
    JudgeAccuracyEvaluator,
    Runtime,
    ShardedEvaluator,
    Update,
)
from rlanything_core.loop.row_sharding import balance_iteration
from rlanything_core.progress import Progress

__all__ = ["LoopModels", "RLAnythingLoop"]


class LoopModels(nn.Module):
    """The policy and the judge as one module: what a checkpoint's ``state_dict`` holds (``policy.*``, ``judge.*``)."""

    def __init__(self, policy: nn.Module, judge: nn.Module | None) -> None:
        super().__init__()
        self.policy = policy
        self.judge = judge  # None registers nothing: a run without a judge checkpoints the policy alone


class RLAnythingLoop:
    """Runs (or resumes) ``iterations`` RLAnything iterations: rollouts, rewards, both updates, adaptation.

    Args:
        source: the data side (``AgentLoopDriver``, ``CodingLoopDriver``); its ``pool`` is the task pool.
        runtime: devices, processes, precision, checkpoint files and logs.
        policy: the policy's update (its ``model`` is the policy).
        judge: the judge model, or ``None`` (no judge); without ``judge_update`` it is frozen (it still votes).
        judge_update: the judge's update, or ``None``.
        iterations: total iterations of the run (``>= 1``).
        checkpoint_dir: where ``last.ckpt`` (and ``iter_<k>.ckpt``) go.
        checkpoint_every: checkpoint every this many completed iterations; the run's last iteration always. A full
            checkpoint holds both models' fp32 weights and Adam states (12-17 s of a 44-56 s iteration for the 0.5B
            pair on an H200, ~180 GB for the 7B pair): ``assembly/memory_plan.checkpoint_every`` chooses it.
        keep_every: also keep a copy every this many iterations (0: never).
        resume: continue from ``last.ckpt`` when a complete one is there.
        evaluator: an ``Evaluator`` (``AgentEvaluator``, ``CodingEvaluator``); ``None`` disables evaluation.
        eval_every: evaluate after every this many iterations (0: only at the end).
        eval_at_start: also evaluate before the first update (the "before optimization" row).
        judge_eval_every: between full evaluations, every this many iterations score only the judge's process
            accuracy (a ``JudgeAccuracyEvaluator``'s ``judge_accuracy()``; 0: never; other evaluators skip these).
        balance_rows: deal the training rows evenly over the ranks after collection (``row_sharding``): rollouts are
            sharded by task group, rows by count, so ranks without a task group train too.
    """

    def __init__(
        self,
        source: IterationSource[Any],
        runtime: Runtime,
        policy: Update,
        judge: nn.Module | None = None,
        judge_update: Update | None = None,
        *,
        iterations: int,
        checkpoint_dir: str | Path,
        checkpoint_every: int = 1,
        keep_every: int = 0,
        resume: bool = True,
        evaluator: Evaluator | None = None,
        eval_every: int = 0,
        eval_at_start: bool = False,
        judge_eval_every: int = 0,
        balance_rows: bool = True,
    ) -> None:
        if iterations < 1:
            raise ValueError(f"iterations: expected >= 1, got {iterations}")
        if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
            raise ValueError(f"checkpoint_every: expected an integer >= 1, got {checkpoint_every!r}")
        if keep_every < 0:
            raise ValueError(f"keep_every: expected >= 0, got {keep_every}")
        if eval_every < 0:
            raise ValueError(f"eval_every: expected >= 0, got {eval_every}")
        if judge_eval_every < 0:
            raise ValueError(f"judge_eval_every: expected >= 0, got {judge_eval_every}")
        if evaluator is not None and not isinstance(evaluator, Evaluator):  # now, not at the first evaluation
            raise TypeError(
                f"evaluator: expected a loop.protocol.Evaluator (callable, with a bool attribute `sharded`), got "
                f"{type(evaluator).__name__}"
            )
        if judge_update is not None and judge_update.model is not judge:
            raise ValueError("judge_update: it must train the loop's judge model")
        if not isinstance(source, IterationSource):
            raise ValueError(f"source: expected an IterationSource, got {type(source).__name__}")
        # every collective of the data side goes through the runtime: the pool sync, the rank's task groups, the
        # sharded evaluation's gathers (an evaluator that declares its collectives: AgentEvaluator, CodingEvaluator)
        source.collectives = runtime
        if isinstance(evaluator, ShardedEvaluator):
            evaluator.collectives = runtime
        self.source = source
        self.runtime = runtime
        self.policy_update = policy
        self.judge_update = judge_update
        self.models = LoopModels(policy.model, judge)
        if judge is not None and judge_update is None:
            judge.requires_grad_(False)
        self.iterations = iterations
        self.checkpoint_dir = Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.keep_every = keep_every
        self.resume = resume
        self.evaluator = evaluator
        self.eval_every = eval_every
        self.eval_at_start = eval_at_start
        self.judge_eval_every = judge_eval_every
        self.balance_rows = balance_rows
        self.completed = 0
        self.update_history: list[dict[str, float]] = []
        self.evaluations: list[dict[str, float]] = []
        self.checkpoint_seconds: dict[int, float] = {}  # completed iterations -> seconds its checkpoint took
        self.saved: list[int] = []  # the completed-iteration counts a last.ckpt was written after
        self._set_up = False

    @property
    def driver(self) -> IterationSource[Any]:
        """The source (``AgentLoopDriver``, ``CodingLoopDriver``): its pool, its collectors."""
        return self.source

    @property
    def policy(self) -> nn.Module:
        """The policy model."""
        return self.models.policy

    @property
    def judge(self) -> nn.Module | None:
        """The judge model, or ``None``."""
        return self.models.judge

    @property
    def last(self) -> Path:
        """The checkpoint a rerun resumes from."""
        return self.checkpoint_dir / "last.ckpt"

    # ------------------------------------------------------------------------------------------------ the run
    def run(self) -> None:
        """Resume, then run the remaining iterations with their checkpoints and evaluations. Collective."""
        self.setup()
        self.restore()
        if self.eval_at_start and self.completed == 0:
            self.evaluate(0)
        # a line per iteration up to 100 (every percent beyond; a bar on a terminal): counts, elapsed, ETA; rank 0
        progress = Progress(self.iterations, "training", unit="iterations", initial=self.completed, log_every=1.0,
                            enabled=self.runtime.rank == 0)  # fmt: skip
        for iteration in range(self.completed, self.iterations):
            with self.rollout_mode():  # every rank: ranks run different numbers of forwards, with no collective
                # this rank's task groups of the pool's sample (and pending rewrites), played by the policy
                rollouts = self.source.collect(iteration)
                # the judge's m votes on every step (coding: its unit tests, run on the programs)
                rollouts = self.source.judge(rollouts)
                # the setting's scorer (R, advantages, judge targets) and both models' rows; a rank without tasks
                # trains on no row, yet takes part in the adaptation's and the update's collectives
                data = self.source.rows(rollouts) if rollouts.episodes else empty_iteration(iteration)
                started = time.perf_counter()
                outcomes = self.source.outcomes(rollouts)  # success rates (+ critic feedback) of this rank's tasks
                plan = self.source.plan(outcomes)  # every rank's outcomes -> the writer's rewrite requests
                candidates = self.source.rewrite(plan)  # each rank its share of the requests, all gathered
                env_metrics = self.source.apply(plan, candidates)  # the writer adds them, saves and shares the pool
                env_metrics["time/adapt_s"] = time.perf_counter() - started  # the pool sync too, without adaptation
                data.metrics.update({**rollouts.metrics, **env_metrics})
            if self.balance_rows:
                data = balance_iteration(data, self.runtime)  # the rows dealt evenly over the ranks
            metrics = self.update(data)  # the policy's update, then the judge's
            self.completed = iteration + 1
            metrics["time/checkpoint_s"] = self.checkpoint()
            self.runtime.log(metrics, step=iteration)
            progress.update()
            self.evaluate_when_due()
        progress.close()
        self.final_evaluation()
        self.runtime.flush_logs()

    def evaluate_only(self) -> dict[str, float] | None:
        """Evaluate the models as they are (no update, no checkpoint read) once; ``None`` on ranks that did not.

        The models are set up exactly as for ``run`` (other ranks launched, FSDP2 shards, ranks that built the
        models on the meta device receive rank 0's weights, the runtime's device), so the evaluation sees what a
        run's first evaluation would. ``{}`` without an evaluator. Without gradients (nothing is trained).
        """
        self.setup()
        with torch.no_grad():
            return {} if self.evaluator is None else self._scores(self.evaluator)

    # ------------------------------------------------------------------------------------------------ the steps
    def setup(self) -> None:
        """Launch the processes, place (or shard) the models, build the optimizers; once."""
        if self._set_up:
            return
        self.runtime.launch()
        self.runtime.setup_models(self.models)
        for update in self._updates():
            update.setup()
        self._set_up = True

    def restore(self) -> None:
        """Persist the initial pool, then load ``last.ckpt`` when resuming (the pool rolled back to its iteration)."""
        self.source.save_initial_pool()  # before the restore, which replaces it (in memory) with the checkpoint's
        path = self.runtime.resume_path(self.last) if self.resume else None
        if path is None:
            return
        rest = self.runtime.load(path, self._state(with_loop=False))
        self.load_state_dict(rest["loop"])
        self.update_history = [dict(e) for e in rest.get("update_history", [])]

    @contextmanager
    def rollout_mode(self) -> Iterator[None]:
        """The policy in eval mode (no dropout in rollouts), inside the runtime's rollout context (full weights)."""
        self.policy.eval()
        with self.runtime.rollout_context(self.policy, self.judge):
            yield

    def update(self, data: IterationData) -> dict[str, float]:
        """The policy's update, then the judge's, on this rank's rows; the iteration's metrics (kept in history)."""
        metrics: dict[str, float] = {f"rollout/{k}": v for k, v in data.metrics.items()}
        metrics["iteration"] = float(data.iteration)
        started = time.perf_counter()
        metrics.update(self.policy_update(data.policy))
        if self.judge_update is not None:
            metrics.update(self.judge_update(data.judge))
        metrics["time/update_s"] = time.perf_counter() - started  # both models' updates (old log-probs included)
        self.update_history.append(metrics)
        return metrics

    def checkpoint_due(self, completed: int) -> bool:
        """Whether the checkpoint after ``completed`` iterations is written (every ``checkpoint_every``, the last)."""
        return completed % self.checkpoint_every == 0 or completed >= self.iterations

    def checkpoint(self) -> float:
        """Save ``last.ckpt`` (and ``iter_<k>.ckpt``) when due, atomically; the seconds it took (0 without)."""
        started = time.perf_counter()
        if self.checkpoint_due(self.completed):
            self.runtime.save(self.last, self._state())
            self.saved.append(self.completed)
        if self.keep_every and self.completed % self.keep_every == 0:
            self.runtime.save(self.checkpoint_dir / f"iter_{self.completed:06d}.ckpt", self._state())
        seconds = time.perf_counter() - started
        self.checkpoint_seconds[self.completed] = seconds
        self.update_history[-1]["time/checkpoint_s"] = seconds  # saved with the next checkpoint
        return seconds

    def evaluate_when_due(self) -> None:
        """A full evaluation every ``eval_every``, else the judge's alone every ``judge_eval_every`` (not the last)."""
        completed = self.completed
        if self.eval_every and completed % self.eval_every == 0:
            self.evaluate(completed)
        elif (
            self.judge_eval_every
            and completed % self.judge_eval_every == 0
            and completed < self.iterations  # the last iteration gets the full evaluation
            and isinstance(self.evaluator, JudgeAccuracyEvaluator)
        ):
            self.evaluate(completed, judge_only=True)

    def final_evaluation(self) -> None:
        """Evaluate the final weights unless that was just done (also after resuming a finished run's checkpoint)."""
        if self.evaluator is not None and not (
            self.evaluations and self.evaluations[-1]["eval/iteration"] == self.completed
        ):
            self.evaluate(self.completed)

    def evaluate(self, completed: int, *, judge_only: bool = False) -> None:
        """Evaluate (or only score the judge) after ``completed`` iterations and log the metrics (rank 0)."""
        if self.evaluator is None:
            return
        scores = self._scores(self.evaluator, judge_only=judge_only)
        if scores is None:
            return
        metrics = {f"eval/{k}": v for k, v in scores.items()}
        metrics["eval/iteration"] = float(completed)
        if not judge_only:
            self.evaluations.append(metrics)
        self.runtime.log(metrics, step=completed)
        self.runtime.flush_logs()

    # ------------------------------------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Completed iterations and RNG states (saved inside each checkpoint, as plain types)."""
        kind, keys, pos, has_gauss, gauss = np.random.get_state()  # plain types: checkpoints load with weights_only
        return {
            "completed": self.completed,
            "python_rng": random.getstate(),
            "numpy_rng": (str(kind), torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss),
                          float(gauss)),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the counter and RNG states; roll the task pool back to this checkpoint's snapshot."""
        self.completed = int(state["completed"])
        random.setstate(state["python_rng"])
        kind, keys, pos, has_gauss, gauss = state["numpy_rng"]
        np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
        torch.set_rng_state(state["torch_rng"])
        self.source.restore_pool(self.completed)

    def _updates(self) -> list[Update]:
        return [u for u in (self.policy_update, self.judge_update) if u is not None]

    def _state(self, *, with_loop: bool = True) -> dict[str, Any]:
        state: dict[str, Any] = {"state_dict": self.models}
        for i, update in enumerate(self._updates()):
            state[f"optimizer_{i}"] = update.optimizer
        if with_loop:
            state["loop"] = self.state_dict()
            state["update_history"] = [{k: float(v) for k, v in e.items()} for e in self.update_history]
        return state

    def _scores(self, evaluator: Evaluator, *, judge_only: bool = False) -> dict[str, float] | None:
        """The evaluator's metrics (or the judge's accuracy) on the full weights; ``None`` where nothing was scored.

        Collective: every rank must call it. A sharded evaluator (loop.sharded_evaluation, the coding evaluator)
        splits the work over the ranks and gathers it: every rank calls it and gets the whole result; any other
        evaluator runs on rank 0 alone (``None`` elsewhere). An evaluator that cannot score the judge alone
        (no ``judge_accuracy``) scores nothing for ``judge_only``: its full evaluations are its only ones.
        """
        score: Callable[[], dict[str, float]] = evaluator
        if judge_only:
            if not isinstance(evaluator, JudgeAccuracyEvaluator):
                return None
            score = evaluator.judge_accuracy
        with self.runtime.rollout_context(self.policy, self.judge):  # every rank gathers (collective)
            if not evaluator.sharded and self.runtime.rank != 0:
                return None
            scores = score()
            return scores if scores or not judge_only else None


