
import pytest

from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.types import collate, judge_rows, policy_rows, rows_from_sequences


def _step(prompt: list[int], resp: list[int], votes: list[int]) -> AgentStep:
    return AgentStep(
        observation="obs",
        admissible_actions=["look"],
        prompt_token_ids=prompt,
        token_ids=resp,
        logprobs=[-0.5] * len(resp),
        response="r",
        action="look",
        judge=[JudgeSample(v, f"\\boxed{{{v}}}", [7, 7], [8], [-0.1]) for v in votes],
    )


def _episodes() -> list[Episode]:
    return [
        Episode("a", 0, "g", [_step([1, 2], [3], [1, -1, 0]), _step([1, 2, 3], [4, 5], [1, 1, 1])], won=True),
        Episode("a", 0, "g", [_step([1], [3, 3, 3], [-1, -1, -1])], won=False),
        Episode("b", 1, "g", [], won=False),
    ]


def test_collate_grid_masks_and_votes() -> None:
    batch = collate(_episodes())
    assert batch.outcome.tolist() == [1.0, -1.0, -1.0]
    assert batch.step_mask.tolist() == [[True, True], [True, False], [False, False]]
    assert batch.group_index.tolist() == [0, 0, 1]
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    assert batch.votes.shape == (3, 2, 3)
    assert batch.vote_mask[0, 0].tolist() == [True, True, True]
    # the unparseable vote is kept in the mask but not valid
    assert batch.vote_valid[0, 0].tolist() == [True, True, False]
    assert not bool(batch.vote_mask[2].any())


def test_collate_without_votes_and_empty_input() -> None:
    assert not collate(_episodes(), num_votes=0).has_votes
    with pytest.raises(ValueError, match="episodes"):
        collate([])


def test_policy_rows_align_tokens() -> None:
    rows = policy_rows(_episodes(), pad_id=0)
    assert rows.num_rows == 3
    assert rows.index.tolist() == [[0, 0, -1], [0, 1, -1], [1, 0, -1]]
    # row 1: prompt [1,2,3], response [4,5]
    assert rows.input_ids[1, :5].tolist() == [1, 2, 3, 4, 5]
    assert rows.response_mask[1].tolist() == [False, False, False, True, True]
    sub = rows.select([0])
    assert sub.input_ids.shape == (1, 3)  # dynamic padding: trimmed to its own length


def test_judge_rows_follow_vote_mask_order() -> None:
    episodes = _episodes()
    rows = judge_rows(episodes, pad_id=0)
    batch = collate(episodes)
    assert batch.vote_mask is not None
    assert rows.index.tolist() == batch.vote_mask.nonzero().tolist()


def test_rows_reject_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="prompts, responses, index"):
        rows_from_sequences([[1]], [[2, 3]], [(0, 0, -1), (1, 0, -1)], pad_id=0)
    rows = rows_from_sequences([[1]], [[2, 3]], [(0, 0, -1)], pad_id=0)
    assert rows.response_mask.tolist() == [[False, True, True]]
