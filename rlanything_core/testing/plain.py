"""Plain-Python reference implementations (nested lists, explicit loops) of the advantage and consistency maths.

Written naively on purpose, as the authors' ``normalize_process_list`` (Open-AgentRL): loops over tasks ->
rollouts -> steps -> votes, with OUR semantics (singleton rule, format failures count 0 in the mean vote, inclusive
bands). The vectorized functions in :mod:`rlanything_core.advantages` and :mod:`rlanything_core.rewards` are tested
against these to 1e-5 and benchmarked against them. Only :func:`from_step_batch`, :func:`steps_to_grid` and
:func:`votes_to_grid` touch torch (conversions, outside any timing).

Nested layout: ``rollout -> step -> requested votes``; a vote is a float, or ``None`` when it could not be parsed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.types import StepBatch

__all__ = [
    "PlainBatch",
    "consistency_targets",
    "from_step_batch",
    "group_success_rate",
    "in_band",
    "integrated_advantages",
    "integrated_step_reward",
    "mean_votes",
    "outcome_step_reward",
    "standardize_per_step",
    "standardize_votes",
    "step_only_reward",
    "steps_to_grid",
    "vote_agreement",
    "votes_to_grid",
]

Vote = float | None


@dataclass(frozen=True)
class PlainBatch:
    """Rollouts as nested lists.

    Attributes:
        outcome: outcome ``O`` of each rollout.
        group: task group id of each rollout.
        votes: ``votes[b][s]`` = the requested votes of step ``s`` of rollout ``b`` (``None`` = unparseable); one
            (possibly empty) list per step, so ``len(votes[b])`` is the rollout's number of steps.
    """

    outcome: list[float]
    group: list[int]
    votes: list[list[list[Vote]]]


def from_step_batch(batch: StepBatch) -> PlainBatch:
    """Convert a padded :class:`StepBatch` to nested lists (requested votes in vote-axis order)."""
    lengths = batch.step_mask.sum(dim=1).tolist()
    if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
        votes: list[list[list[Vote]]] = [[[] for _ in range(n)] for n in lengths]
    else:
        values, mask, valid = batch.votes.tolist(), batch.vote_mask.tolist(), batch.vote_valid.tolist()
        votes = [
            [
                [values[b][s][j] if valid[b][s][j] else None for j in range(len(mask[b][s])) if mask[b][s][j]]
                for s in range(n)
            ]
            for b, n in enumerate(lengths)
        ]
    return PlainBatch(outcome=batch.outcome.tolist(), group=batch.group_index.tolist(), votes=votes)


def steps_to_grid(values: list[list[float]], num_steps: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """Nested ``rollout -> step`` values to a right-padded ``(B, num_steps)`` tensor, 0 at padding."""
    out = torch.zeros(len(values), num_steps, dtype=dtype)
    for b, row in enumerate(values):
        if row:
            out[b, : len(row)] = torch.tensor(row, dtype=dtype)
    return out


def votes_to_grid(values: list[list[list[float]]], vote_mask: Tensor, dtype: torch.dtype = torch.float64) -> Tensor:
    """Nested ``rollout -> step -> requested vote`` values back onto the ``vote_mask`` grid, 0 elsewhere."""
    flat = [x for row in values for step in row for x in step]
    out = torch.zeros(vote_mask.shape, dtype=dtype)
    out[vote_mask] = torch.tensor(flat, dtype=dtype)
    return out


def mean_votes(step_votes: list[Vote]) -> float:
    """Mean over the requested votes of one step, an unparseable vote counting 0; 0 if none was requested."""
    if not step_votes:
        return 0.0
    total = 0.0
    for vote in step_votes:
        if vote is not None:
            total += vote
    return total / len(step_votes)


def integrated_step_reward(batch: PlainBatch, *, lam: float = 1.0) -> list[list[float]]:
    """``R[b][s] = O_b + lam * mean_votes(votes[b][s])``."""
    rewards = []
    for b, steps in enumerate(batch.votes):
        rewards.append([batch.outcome[b] + lam * mean_votes(step_votes) for step_votes in steps])
    return rewards


def outcome_step_reward(batch: PlainBatch) -> list[list[float]]:
    """``R[b][s] = O_b``."""
    return [[batch.outcome[b] for _ in steps] for b, steps in enumerate(batch.votes)]


def step_only_reward(batch: PlainBatch) -> list[list[float]]:
    """``R[b][s] = mean_votes(votes[b][s])``."""
    return [[mean_votes(step_votes) for step_votes in steps] for steps in batch.votes]


def standardize_per_step(
    rewards: list[list[float]],
    group: list[int],
    *,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
) -> list[list[float]]:
    """Per task, per step index: z-score over the rollouts that have that step (population std)."""
    tasks: dict[int, list[int]] = {}
    for b, g in enumerate(group):
        tasks.setdefault(g, []).append(b)
    out = [[0.0] * len(row) for row in rewards]
    for members in tasks.values():
        longest = max(len(rewards[b]) for b in members)
        for k in range(longest):
            reached = [b for b in members if len(rewards[b]) > k]
            if len(reached) < 2:
                for b in reached:
                    out[b][k] = rewards[b][k] if singleton is SingletonRule.RAW else 0.0
                continue
            values = [rewards[b][k] for b in reached]
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
            for b in reached:
                out[b][k] = (rewards[b][k] - mean) / std if std > eps else 0.0
    return out


def integrated_advantages(
    batch: PlainBatch, *, lam: float = 1.0, eps: float = EPS, singleton: SingletonRule = SingletonRule.ZERO
) -> list[list[float]]:
    """Integrated reward, then per-step standardization."""
    return standardize_per_step(integrated_step_reward(batch, lam=lam), batch.group, eps=eps, singleton=singleton)


def group_success_rate(outcome: list[float], group: list[int]) -> list[float]:
    """Success rate (``O > 0``) of each rollout's task group."""
    wins: dict[int, int] = {}
    size: dict[int, int] = {}
    for o, g in zip(outcome, group):
        size[g] = size.get(g, 0) + 1
        wins[g] = wins.get(g, 0) + (1 if o > 0 else 0)
    return [wins[g] / size[g] for g in group]


def in_band(rate: float, band: tuple[float, float]) -> bool:
    """``low <= rate <= high``."""
    return band[0] <= rate <= band[1]


def consistency_targets(
    rewards: list[list[float]], votes: list[list[list[Vote]]], *, format_penalty: float = FORMAT_PENALTY
) -> list[list[list[float]]]:
    """``R[b][s] * vote`` for a parsed vote, ``format_penalty`` for an unparseable one."""
    out = []
    for b, steps in enumerate(votes):
        row = []
        for s, step_votes in enumerate(steps):
            row.append([format_penalty if v is None else rewards[b][s] * v for v in step_votes])
        out.append(row)
    return out


def standardize_votes(targets: list[list[list[float]]], *, eps: float = EPS) -> list[list[list[float]]]:
    """Z-score the requested votes of each step among themselves (population std; ``std <= eps`` -> all 0)."""
    out = []
    for steps in targets:
        row: list[list[float]] = []
        for values in steps:
            if not values:
                row.append([])
                continue
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
            row.append([(v - mean) / std if std > eps else 0.0 for v in values])
        out.append(row)
    return out


def vote_agreement(votes: list[list[list[Vote]]], outcome: list[float]) -> float:
    """Fraction of parsed votes whose sign equals the sign of the rollout's outcome (0 if none)."""

    def sign(x: float) -> int:
        return (x > 0) - (x < 0)

    agree = total = 0
    for b, steps in enumerate(votes):
        for step_votes in steps:
            for v in step_votes:
                if v is not None:
                    total += 1
                    agree += sign(v) == sign(outcome[b])
    return agree / total if total else 0.0
