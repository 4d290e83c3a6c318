"""Environment adaptation inside the loop: acceptance of last iteration's rewrites, new rewrite requests.

Runs on the pool's single writer with the success rates of every task rolled out this iteration (all ranks'):

1. each pending candidate that was rolled out is accepted or rejected (``TaskPool.resolve``);
2. every active task outside the band whose slot has nothing pending is rewritten harder/easier from its critic
   feedback (``build_feedback``); the first valid candidate becomes the slot's pending task, rolled out next
   iteration.

The rewrites (an LLM call each, for the coding and SmolLM2 rewriters) need no pool state: ``plan`` (writer) lists
them, ``rewrite`` runs one on any rank, ``apply`` (writer) adds the candidates in request order;
``RLAnythingLoop.run`` calls the three through ``loop.pool_sync.PoolSnapshots`` (``plan``, ``rewrite``,
``apply``), spreading the rewrites over the ranks (one process: all of them there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.feedback import TaskFeedback, build_feedback
from rlanything_core.adaptation.llm import ChatModel
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, TaskRewriter, TaskSpec
from rlanything_core.records import Episode

__all__ = ["EnvironmentAdaptation", "RewriteRequest"]


@dataclass(frozen=True)
class RewriteRequest:
    """One task to rewrite: the active task, which way, its success rate and its critic feedback."""

    task: TaskSpec
    direction: Direction
    acc: float
    feedback: TaskFeedback | None


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

    def plan(
        self,
        pool: TaskPool,
        episodes: Sequence[Episode],
        rates: dict[str, float],
        *,
        iteration: int,
        seed: int,
        feedback: dict[str, TaskFeedback] | None = None,
    ) -> tuple[dict[str, float], list[RewriteRequest]]:
        """Record the rates, resolve the pending candidates that were rolled out, list this iteration's rewrites.

        Runs on the pool's writer (it changes the pool). Returns the acceptance metrics and the requests, each with
        its critic feedback, in the order their candidates must be added (``apply``). ``feedback`` replaces the critic
        feedback built from ``episodes`` (single-turn settings such as coding, whose critic is the per-test pass rates
        rather than failure summaries).
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
        metrics = {"env/accepted": float(accepted), "env/rejected": float(rejected)}
        return metrics, [RewriteRequest(task, direction, acc, feedback.get(task.task_id)) for task, direction, acc
                         in requests]

    def rewrite(self, request: RewriteRequest) -> list[Candidate]:
        """The rewriter's candidates for one request (any rank: it reads no pool state)."""
        return self.rewriter.rewrite(request.task, request.direction, request.feedback)

    def apply(
        self,
        pool: TaskPool,
        requests: Sequence[RewriteRequest],
        candidates: Sequence[Sequence[Candidate]],
        *,
        iteration: int,
        metrics: dict[str, float],
    ) -> dict[str, float]:
        """Add each request's candidates to the pool, in request order (on the writer); returns all metrics."""
        if len(candidates) != len(requests):
            raise ValueError(f"candidates: expected one list per request ({len(requests)}), got {len(candidates)}")
        scheduled = n_candidates = valid = 0
        for request, cands in zip(requests, candidates):
            n_candidates += len(cands)
            valid += sum(c.valid for c in cands)
            scheduled += int(pool.add_candidates(cands, parent_acc=request.acc, iteration=iteration) is not None)
        return {
            **metrics,
            "env/accepted_total": float(len(pool.accepted_ids())),
            "env/requests": float(len(requests)),
            "env/candidates": float(n_candidates),
            "env/valid_candidates": float(valid),
            "env/scheduled": float(scheduled),
            "env/pending": float(len(pool.pending)),
        }
