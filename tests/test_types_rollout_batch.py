"""``RolloutBatch``: built once from the episodes, its row selection equals the old join of grid and rows."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.types import RolloutBatch, TokenRows, TrainingRows, collate, judge_rows, policy_rows


@st.composite
def episode_lists(draw: st.DrawFn) -> list[Episode]:
    """1-6 episodes over 1-3 groups, 0-3 steps each, 0-3 judge samples per step (+1, -1 or unparseable)."""
    episodes = []
    for _ in range(draw(st.integers(1, 6))):
        steps = []
        for _ in range(draw(st.integers(0, 3))):
            samples = [
                JudgeSample(draw(st.sampled_from([1, -1, None])), "", [5] * draw(st.integers(1, 3)), [6], [])
                for _ in range(draw(st.integers(0, 3)))
            ]
            prompt = draw(st.lists(st.integers(1, 50), min_size=1, max_size=4))
            response = draw(st.lists(st.integers(1, 50), min_size=1, max_size=3))
            steps.append(AgentStep("o", ["a"], prompt, response, [], "a", "a", judge=samples))
        episodes.append(Episode("t", draw(st.integers(0, 2)), "g", steps, won=draw(st.booleans())))
    return episodes


def _old_join(rows: TokenRows, values: Tensor, keep: Tensor, group: Tensor) -> TrainingRows | None:
    """The join ``loop/iteration.py`` did before ``RolloutBatch``: one value per row, band, non-zero."""
    b = rows.index[:, 0]
    selected = keep[b] & (values.float() != 0)
    if not bool(selected.any()):
        return None
    index = selected.nonzero().squeeze(1)
    return TrainingRows(rows.select(index), values.float()[index], group[b[index]])


def _assert_same(got: TrainingRows | None, want: TrainingRows | None) -> None:
    assert (got is None) == (want is None)
    if got is None or want is None:
        return
    for name in ("input_ids", "attention_mask", "response_mask", "index"):
        assert torch.equal(getattr(got.rows, name), getattr(want.rows, name)), name
    assert torch.equal(got.advantages, want.advantages) and torch.equal(got.group, want.group)


@settings(max_examples=60, deadline=None)
@given(episodes=episode_lists(), num_votes=st.sampled_from([None, 1, 2]), seed=st.integers(0, 999))
def test_selection_equals_the_old_join(episodes: list[Episode], num_votes: int | None, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    batch = RolloutBatch.from_episodes(episodes, pad_id=0, num_votes=num_votes)
    steps = collate(episodes, num_votes=num_votes)
    b, s = steps.step_mask.shape
    # columns with exact zeros (dropped rows) and NaN at padding (never read)
    advantages = torch.randint(-1, 2, (b, s), generator=g).float().masked_fill(~steps.step_mask, float("nan"))
    keep = torch.rand(b, generator=g) < 0.7
    batch = batch.with_columns(advantages=advantages)
    old_policy = policy_rows(episodes, pad_id=0)
    index = old_policy.index
    _assert_same(
        batch.policy_training_rows(keep),
        _old_join(old_policy, advantages[index[:, 0], index[:, 1]], keep, steps.group_index),
    )
    if not steps.has_votes:
        assert batch.judge_rows is None and batch.judge_training_rows(keep) is None
        return
    assert steps.vote_mask is not None
    targets = torch.randint(-1, 2, tuple(steps.vote_mask.shape), generator=g).float()
    batch = batch.with_columns(judge_targets=targets)
    # the old join: targets in vote_mask.nonzero() order, judge rows built separately
    want = _old_join(judge_rows(episodes, pad_id=0, num_votes=num_votes), targets[steps.vote_mask], keep,
                     steps.group_index)  # fmt: skip
    _assert_same(batch.judge_training_rows(keep), want)


def test_kept_zero_rows_and_missing_columns() -> None:
    step = AgentStep("o", ["a"], [1, 2], [3], [], "a", "a", judge=[JudgeSample(1, "", [5], [6], [])] * 2)
    episodes = [Episode("t", 0, "g", [step, step], won=True), Episode("t", 0, "g", [step], won=False)]
    batch = RolloutBatch.from_episodes(episodes, pad_id=0)
    keep = torch.tensor([True, True])
    with pytest.raises(ValueError, match="advantages"):
        batch.policy_training_rows(keep)
    with pytest.raises(ValueError, match="judge_targets"):
        batch.judge_training_rows(keep)
    with pytest.raises(ValueError, match="advantages"):
        batch.with_columns(advantages=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="judge_targets"):
        batch.with_columns(judge_targets=torch.zeros(2, 2))
    with pytest.raises(ValueError, match="step_reward"):
        batch.with_columns(step_reward=torch.zeros(2, 2, dtype=torch.int64))
    batch = batch.with_columns(advantages=torch.zeros(2, 2), judge_targets=torch.zeros(2, 2, 2))
    assert batch.policy_training_rows(keep) is None  # every advantage is 0
    kept = batch.policy_training_rows(keep, drop_zero=False)
    assert kept is not None and kept.num_rows == 3
    judge = batch.judge_training_rows(keep, drop_zero=False)
    assert judge is not None and judge.num_rows == 6 and judge.rows.index.tolist()[0] == [0, 0, 0]
    with pytest.raises(ValueError, match="keep"):
        batch.policy_training_rows(torch.tensor([1, 1]), drop_zero=False)
    with pytest.raises(ValueError, match="keep"):
        batch.policy_training_rows(torch.tensor([True]), drop_zero=False)


def test_without_votes_there_are_no_judge_rows() -> None:
    step = AgentStep("o", ["a"], [1], [3], [], "a", "a")
    batch = RolloutBatch.from_episodes([Episode("t", 0, "g", [step], won=True)], pad_id=0)
    assert batch.judge_rows is None and not batch.steps.has_votes
    with pytest.raises(ValueError, match="judge_targets: expected a batch with votes"):
        batch.with_columns(judge_targets=torch.zeros(1, 1, 1))
