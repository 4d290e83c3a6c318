"""What the step reward's judge term reads: the ``m`` sampled votes (the paper) or each step's expected vote.

``R = O + lam * mean_j S_j`` averages ``m`` votes sampled from the judge; their noise shrinks as ``1 / m``. The
expected vote ``2 P(+1) - 1`` is the ``m -> infinity`` limit: ``R = O + lam * (2 P(+1) - 1)`` keeps the judge's bias and
drops its sampling noise, which tells a loss caused by vote noise from one caused by what the judge believes. The
judge's own consistency rows still train on its sampled votes (their log-probabilities), with this ``R``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import torch
from torch import Tensor

from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.records import Episode
from rlanything_core.types import StepBatch

__all__ = ["VoteMode", "expected_votes", "vote_mode_reward"]


class VoteMode(str, enum.Enum):
    """How the judge's votes enter ``R`` (Hydra: ``{_target_: ...VoteMode, _args_: [expected]}``)."""

    SAMPLED = "sampled"
    """``mean(votes)`` of the ``m`` sampled votes (arXiv 2602.02488)."""
    EXPECTED = "expected"
    """``2 P(+1) - 1`` of each step, from the ``P(+1)`` its votes were drawn from (``JudgeSample.p_plus``)."""


def expected_votes(episodes: Sequence[Episode], step_mask: Tensor) -> Tensor:
    """``(B, S)`` expected vote ``2 P(+1) - 1`` of every step (0 at padding); ``P(+1)``: its votes' mean ``p_plus``.

    Raises:
        ValueError: a step has no vote that records ``p_plus`` (a generative judge's votes do not).
    """
    out = torch.zeros(step_mask.shape, dtype=torch.float32)
    for b, e in enumerate(episodes):
        for t, s in enumerate(e.steps):
            probs = [v.p_plus for v in s.judge if v.p_plus is not None]
            if not probs:
                raise ValueError(
                    f"vote_mode: expected votes need P(+1) on every step; step {t} of rollout {b} ({e.task_id}) has "
                    "none (this judge's vote sampler does not record p_plus): use vote_mode=sampled"
                )
            out[b, t] = 2.0 * sum(probs) / len(probs) - 1.0
    return out


def vote_mode_reward(mode: VoteMode, step_reward: StepReward, steps: StepBatch, episodes: Sequence[Episode]) -> Tensor:
    """``(B, S)`` step reward ``R`` of ``steps`` (built from ``episodes``, in order) under ``mode``.

    Raises:
        ValueError: ``mode`` is not a ``VoteMode``, or (expected) a step without ``P(+1)``.
    """
    mode = VoteMode(mode) if isinstance(mode, str) else mode
    if not isinstance(mode, VoteMode):
        raise ValueError(f"vote_mode: expected a VoteMode, got {mode!r}")
    if mode is VoteMode.SAMPLED:
        return step_reward(steps)
    mask = steps.step_mask
    expected = expected_votes(episodes, mask).to(steps.outcome.dtype)
    return torch.where(mask, steps.outcome.unsqueeze(-1) + step_reward.lam * expected, torch.zeros_like(expected))
