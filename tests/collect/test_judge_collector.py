"""``JudgeCollector.judge`` returns judged copies and leaves its inputs alone (data flows one way).

A stub vote sampler stands in for the model: it turns each vote's seed into the vote, so the tests see exactly which
seed drove which vote without loading a model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from rlanything_core.collect.judge import JudgeCollector, JudgeStats, with_votes
from rlanything_core.collect.prompts import Messages
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.seeding import derive_seed


class SeedVotes:
    """Vote ``+1`` on odd seeds, ``-1`` on even ones, ``0`` (a format failure) on multiples of 5; text = the seed."""

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        return [JudgeSample(0 if s % 5 == 0 else 1 if s % 2 else -1, str(s), [1, 2], [3], [-0.5]) for s in seeds]


def _step(t: int) -> AgentStep:
    old = [JudgeSample(1, "an earlier vote")]  # judging replaces earlier votes (on the copy)
    return AgentStep(f"obs {t}", ["look", "go north"], [7, 8], [9], [-0.1], "look", "look", judge=old)


def _episodes() -> list[Episode]:
    return [
        Episode("a", 0, "find the mug", [_step(0), _step(1)]),
        Episode("a", 0, "find the mug", [_step(0)]),
        Episode("b", 1, "open the door", [_step(0), _step(1), _step(2)], won=True),
        Episode("c", 2, "nothing to do", []),
    ]


def test_judge_returns_judged_copies_and_leaves_the_inputs_unchanged() -> None:
    episodes = _episodes()
    before = copy.deepcopy(episodes)
    judged, stats = JudgeCollector(object(), num_votes=3, votes=SeedVotes(), chunk_size=4).judge(episodes, seed=11)
    assert episodes == before  # no vote written into the caller's episodes
    assert all(len(s.judge) == 1 and s.judge[0].text == "an earlier vote" for e in episodes for s in e.steps)
    assert [(e.task_id, e.group_id, e.won, len(e.steps)) for e in judged] == [
        (e.task_id, e.group_id, e.won, len(e.steps)) for e in episodes
    ]
    assert not any(j is e or js is s for j, e in zip(judged, episodes) for js, s in zip(j.steps, e.steps))
    assert all(len(s.judge) == 3 for e in judged for s in e.steps)
    assert isinstance(stats, JudgeStats) and stats.steps == 6 and stats.votes == 18
    assert stats.format_failures == sum(v.vote == 0 for e in judged for s in e.steps for v in s.judge)


def test_vote_k_of_step_t_of_rollout_j_in_group_g_has_its_own_seed() -> None:
    judged, _ = JudgeCollector(object(), num_votes=2, votes=SeedVotes()).judge(_episodes(), seed=3)
    rollout_in_group = [0, 1, 0, 0]
    for e, j in zip(judged, rollout_in_group):
        for t, step in enumerate(e.steps):
            assert [v.text for v in step.judge] == [str(derive_seed(3, e.group_id, j, t, k)) for k in range(2)]
    alone, _ = JudgeCollector(object(), num_votes=2, votes=SeedVotes()).judge(_episodes()[2:3], seed=3)
    assert alone[0].steps == judged[2].steps  # independent of what else is in the batch


def test_with_votes_copies_and_checks_one_vote_list_per_step() -> None:
    e = _episodes()[0]
    votes = [[JudgeSample(1, "x")], [JudgeSample(-1, "y")]]
    out = with_votes(e, votes)
    assert [[v.vote for v in s.judge] for s in out.steps] == [[1], [-1]]
    assert [s.judge[0].text for s in e.steps] == ["an earlier vote"] * 2
    assert out.steps[0].prompt_token_ids is e.steps[0].prompt_token_ids  # tokens are shared, not copied
    with pytest.raises(ValueError, match=r"votes: expected one list per step \(2\), got 1"):
        with_votes(e, votes[:1])
