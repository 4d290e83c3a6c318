"""program_episodes: each program a one-step episode; the task's unit tests the judge samples of its first step."""

from __future__ import annotations

import pytest
import torch

from rlanything_core.collect.coding import CodeSample, GeneratedTest, program_episodes
from rlanything_core.types import collate, judge_rows, policy_rows


def _program(passed: list[bool], program: str | None = "print(1)") -> CodeSample:
    return CodeSample("p", 0, [1, 2], [3], [-0.5], "text", program, passed)


def _test(n: int) -> GeneratedTest:
    return GeneratedTest("p", 0, [7], [8, n], [-1.0, -1.0], f"test {n}", ("1", "1"))


def test_programs_become_single_step_episodes_with_the_tests_on_the_first() -> None:
    programs = [_program([True, True]), _program([True, False]), _program([False, False], None)]
    episodes = program_episodes(programs, [_test(0), _test(1)], group=5, goal="add two numbers")
    assert [e.outcome for e in episodes] == [1.0, -1.0, -1.0]
    assert all(len(e.steps) == 1 and e.group_id == 5 and e.goal == "add two numbers" for e in episodes)
    assert [len(e.steps[0].judge) for e in episodes] == [2, 0, 0]
    assert [s.token_ids for s in episodes[0].steps[0].judge] == [[8, 0], [8, 1]]
    assert episodes[2].steps[0].action_parse_failed and episodes[2].steps[0].action == ""
    grid = collate(episodes)
    assert grid.vote_mask is not None and grid.vote_valid is not None
    assert grid.vote_mask[:, 0].tolist() == [[True, True], [False, False], [False, False]]
    assert not bool(grid.vote_valid.any())  # a unit test is no vote
    assert torch.equal(judge_rows(episodes, pad_id=0).index, torch.tensor([[0, 0, 0], [0, 0, 1]]))
    assert torch.equal(policy_rows(episodes, pad_id=0).input_ids, torch.tensor([[1, 2, 3]] * 3))


def test_a_program_without_gt_results_is_lost() -> None:
    assert program_episodes([_program([])], [], group=0, goal="g")[0].outcome == -1.0


def test_tests_without_a_program_are_refused() -> None:
    with pytest.raises(ValueError, match="programs: expected at least one program"):
        program_episodes([], [_test(0)], group=0, goal="g")
