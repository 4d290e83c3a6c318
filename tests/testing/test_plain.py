"""The plain-Python reference itself, on hand-computed examples (so the equivalence tests use a checked oracle)."""

from __future__ import annotations

import math

import pytest
import torch

from rlanything_core.advantages import SingletonRule
from rlanything_core.testing import plain
from rlanything_core.types import StepBatch


def test_hand_computed_batch() -> None:
    # task 7: rollout 0 wins in 3 steps, rollout 1 fails in 1 step; task 3: rollout 2 alone (2 steps)
    batch = plain.PlainBatch(
        outcome=[1.0, -1.0, -1.0],
        group=[7, 7, 3],
        votes=[[[1.0, 1.0, None], [-1.0, -1.0, -1.0], [1.0]], [[-1.0, None, None]], [[], [1.0, -1.0]]],
    )
    reward = plain.integrated_step_reward(batch, lam=1.0)
    assert reward == [[1 + 2 / 3, 0.0, 2.0], [-1 - 1 / 3], [-1.0, -1.0]]
    adv = plain.standardize_per_step(reward, batch.group)
    assert adv == [[1.0, 0.0, 0.0], [-1.0], [0.0, 0.0]]  # step 0 of task 7: two values -> +-1; singletons -> 0
    raw = plain.standardize_per_step(reward, batch.group, singleton=SingletonRule.RAW)
    assert raw == [[1.0, 0.0, 2.0], [-1.0], [-1.0, -1.0]]
    targets = plain.consistency_targets(reward, batch.votes)
    assert (
        targets[0][0] == pytest.approx([5 / 3, 5 / 3, -2.0])
        and targets[0][1] == [0.0, 0.0, 0.0]
        and targets[2][0] == []
    )
    z = plain.standardize_votes(targets)
    assert z[0][0] == pytest.approx([2**-0.5, 2**-0.5, -(2**0.5)]) and z[0][1] == [0.0, 0.0, 0.0]
    assert z[0][2] == [0.0]  # one vote: no spread
    assert plain.group_success_rate(batch.outcome, batch.group) == [0.5, 0.5, 0.0]
    assert plain.vote_agreement(batch.votes, batch.outcome) == pytest.approx(5 / 9)
    assert plain.mean_votes([]) == 0.0 and plain.mean_votes([None, None]) == 0.0


def test_three_rollouts_population_std() -> None:
    adv = plain.standardize_per_step([[2.0], [0.0], [-2.0]], [0, 0, 0])
    assert [row[0] for row in adv] == pytest.approx([math.sqrt(1.5), 0.0, -math.sqrt(1.5)])


def test_in_band_inclusive() -> None:
    assert plain.in_band(0.2, (0.2, 0.8)) and plain.in_band(0.8, (0.2, 0.8)) and not plain.in_band(0.1, (0.2, 0.8))


def test_conversions_round_trip() -> None:
    step_mask = torch.tensor([[True, True], [True, False]])
    vote_mask = torch.tensor([[[True, False, True], [True, True, True]], [[False, True, False], [False, False, False]]])
    vote_valid = vote_mask & torch.tensor([[[True, True, False], [True, True, True]], [[True, True, True], [True] * 3]])
    votes = torch.where(vote_valid, torch.tensor(-1.0), torch.tensor(float("nan")))
    batch = StepBatch(torch.tensor([1.0, -1.0]), step_mask, torch.tensor([0, 1]), votes, vote_mask, vote_valid)
    pb = plain.from_step_batch(batch)
    assert pb.votes == [[[-1.0, None], [-1.0, -1.0, -1.0]], [[-1.0]]]
    assert pb.group == [0, 1] and pb.outcome == [1.0, -1.0]
    grid = plain.votes_to_grid([[[1.0, 2.0], [3.0, 4.0, 5.0]], [[6.0]]], vote_mask)
    assert grid[0, 0].tolist() == [1.0, 0.0, 2.0] and grid[1, 0].tolist() == [0.0, 6.0, 0.0]
    assert plain.steps_to_grid([[1.0, 2.0], [3.0]], 3).tolist() == [[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]]
    no_votes = plain.from_step_batch(StepBatch(torch.tensor([1.0, -1.0]), step_mask, torch.tensor([0, 1])))
    assert no_votes.votes == [[[], []], [[]]]
