"""Environment adaptation inside the loop: acceptance of last iteration's rewrites, new rewrite requests.

Runs on the pool's single writer with the success rates of every task rolled out this iteration (all ranks'):

1. each pending candidate that was rolled out is accepted or rejected (``TaskPool.resolve``);
2. every active task outside the band whose slot has nothing pending is rewritten harder/easier from its critic
   feedback (``build_feedback``); the first valid candidate becomes the slot's pending task, rolled out next
   iteration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlanything_core.environment.feedback import TaskFeedback, build_feedback
from rlanything_core.environment.llm import ChatModel
from rlanything_core.environment.pool import TaskPool
from rlanything_core.environment.rewriters.protocol import TaskRewriter
from rlanything_core.records import Episode

__all__ = ["EnvironmentAdaptation"]


@dataclass
class EnvironmentAdaptation:
    """Critic feedback -> rewriter -> pool, once per iteration.

    Attributes:
        rewriter: proposes harder/easier candidates (validated before they are scheduled).
        feedback_model: writes failure summaries; ``None`` uses the deterministic template.
        max_requests: rewrite at most this many tasks per iteration (bounds the rewriter's cost).
    """

    rewriter: TaskRewriter
    feedback_model: ChatModel | None = None
    max_requests: int = 8

    def step(
        self,
        pool: TaskPool,
        episodes: Sequence[Episode],
        rates: dict[str, float],
        *,
        iteration: int,
        seed: int,
        feedback: dict[str, TaskFeedback] | None = None,
    ) -> dict[str, float]:
        """Resolve pending rewrites, request new ones; returns metrics. Does not save the pool.

        ``feedback`` replaces the critic feedback built from ``episodes`` (single-turn settings such as coding, whose
        critic is the per-test pass rates rather than failure summaries).
        """
        pool.record_rates(rates, iteration=iteration)
        accepted = rejected = 0
        for task_id in [t for t in rates if t in pool.pending]:
            decision = pool.resolve(task_id, rates[task_id], iteration=iteration)
            accepted += int(decision.accepted)
            rejected += int(not decision.accepted)
        requests = pool.requests({t: r for t, r in rates.items() if t not in pool.pending})[: self.max_requests]
        if feedback is None:
            feedback = build_feedback(
                episodes, chat_model=self.feedback_model, seed=seed, tasks=[task.task_id for task, _, _ in requests]
            )
        scheduled = candidates = valid = 0
        for task, direction, acc in requests:
            cands = self.rewriter.rewrite(task, direction, feedback.get(task.task_id))
            candidates += len(cands)
            valid += sum(c.valid for c in cands)
            scheduled += int(pool.add_candidates(cands, parent_acc=acc, iteration=iteration) is not None)
        return {
            "env/accepted": float(accepted),
            "env/rejected": float(rejected),
            "env/accepted_total": float(len(pool.accepted_ids())),
            "env/requests": float(len(requests)),
            "env/candidates": float(candidates),
            "env/valid_candidates": float(valid),
            "env/scheduled": float(scheduled),
            "env/pending": float(len(pool.pending)),
        }
