"""The vote mode of R: sampled votes (the paper) or the expected vote 2 P(+1) - 1."""

from __future__ import annotations

import pytest
import torch

from rlanything_core.advantages.step_reward import StepReward
from rlanything_core.loop.vote_mode import VoteMode, expected_votes, vote_mode_reward
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.types import collate


def _episode(won: bool, votes: list[list[tuple[int, float | None]]]) -> Episode:
    steps = [AgentStep("o", ["a"], [1], [2], [0.0], "a", "a", judge=[JudgeSample(v, "", p_plus=p) for v, p in step])
             for step in votes]  # fmt: skip
    return Episode("g", 0, "goal", steps, won=won)


def test_the_expected_vote_replaces_the_sampled_mean_and_padding_stays_zero() -> None:
    eps = [_episode(True, [[(1, 0.9), (1, 0.9), (-1, 0.9)], [(-1, 0.25), (-1, 0.25), (-1, 0.25)]]),
           _episode(False, [[(1, 0.6), (-1, 0.6), (-1, 0.6)]])]  # fmt: skip
    steps = collate(eps)
    sampled = vote_mode_reward(VoteMode.SAMPLED, StepReward(lam=0.5), steps, eps)
    expected = vote_mode_reward(VoteMode.EXPECTED, StepReward(lam=0.5), steps, eps)
    assert torch.allclose(sampled, StepReward(lam=0.5)(steps))
    want = torch.tensor([[1 + 0.5 * 0.8, 1 + 0.5 * -0.5], [-1 + 0.5 * 0.2, 0.0]])
    assert torch.allclose(expected, want)
    assert vote_mode_reward("expected", StepReward(), steps, eps).shape == (2, 2)  # type: ignore[arg-type]


def test_expected_votes_refuse_a_judge_that_does_not_know_p_plus() -> None:
    eps = [_episode(True, [[(1, None), (1, None)]])]
    with pytest.raises(ValueError, match="vote_mode: expected votes need P"):
        expected_votes(eps, collate(eps).step_mask)
    with pytest.raises(ValueError):
        vote_mode_reward("median", StepReward(), collate(eps), eps)  # type: ignore[arg-type]
