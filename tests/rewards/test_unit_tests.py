"""Unit-test rewards of the coding setting: hand examples, properties, plain-Python equivalence, UT/Detect counts."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.constants import FORMAT_PENALTY
from rlanything_core.rewards import (
    UnitTestCounts,
    code_pass_fraction,
    correct_codes,
    standardize_unit_test_rewards,
    unit_test_counts,
    unit_test_rewards,
)

T, F = True, False


def plain_rewards(
    gt: list[list[bool]], gen: list[list[bool]], parsed: list[bool], penalty: float = FORMAT_PENALTY
) -> list[float] | None:
    """The authors' rule (Open-AgentRL reward/llm_rl_reward.py) with a strictly-lowest format penalty, in plain
    Python."""
    correct = [all(row) for row in gt]
    if not any(correct):
        return None
    wrong = [i for i, c in enumerate(correct) if not c]
    good = [i for i, c in enumerate(correct) if c]
    out: list[float] = []
    for k, ok in enumerate(parsed):
        if not ok:
            out.append(min(penalty, -(max(len(wrong), 1) + 1)))
            continue
        is_gt = all(gen[i][k] for i in good)
        if not wrong:
            out.append(1.0 if is_gt else -1.0)
        elif is_gt:
            out.append(float(sum(1 for i in wrong if not gen[i][k])))
        else:
            out.append(-float(sum(1 for i in wrong if gen[i][k])))
    return out


def plain_counts(gt: list[list[bool]], gen: list[list[bool]], parsed: list[bool]) -> tuple[int, int, int, int]:
    correct = [all(row) for row in gt]
    if not any(correct):
        return 0, 0, 0, 0
    k_total = len(parsed)
    ut = sum(1 for k in range(k_total) if parsed[k] and all(gen[i][k] for i, c in enumerate(correct) if c))
    if all(correct):
        return ut, k_total, 0, 0
    det = sum(
        1
        for k in range(k_total)
        if parsed[k]
        and all(gen[i][k] for i, c in enumerate(correct) if c)
        and not any(gen[i][k] for i, c in enumerate(correct) if not c)
    )
    return ut, k_total, det, k_total


def test_hand_example_with_wrong_codes() -> None:
    gt = torch.tensor([[T, T], [T, F], [F, F], [T, T]])  # codes 0 and 3 correct; 1 and 2 wrong
    gen = torch.tensor(
        [
            # tests: perfect, useless-correct, wrong (passed by a wrong code, failed by a correct one), half, bad
            [T, T, F, T, F],
            [F, T, T, T, F],
            [F, T, F, F, F],
            [T, T, T, T, F],
        ]
    )
    parsed = torch.tensor([T, T, T, T, F])
    got = unit_test_rewards(gt, gen, parsed)
    assert got is not None
    assert got.tolist() == [2.0, 0.0, -1.0, 1.0, -3.0]
    counts = unit_test_counts(gt, gen, parsed)
    assert counts == UnitTestCounts(ut_correct=3, ut_total=5, detect_correct=1, detect_total=5)
    assert counts.ut_accuracy == pytest.approx(0.6) and counts.detect_rate == pytest.approx(0.2)


def test_no_wrong_code_gives_plus_minus_one_and_no_detect_denominator() -> None:
    gt = torch.tensor([[T], [T]])
    gen = torch.tensor([[T, F, T], [T, T, T]])
    got = unit_test_rewards(gt, gen, torch.tensor([T, T, F]))
    assert got is not None and got.tolist() == [1.0, -1.0, FORMAT_PENALTY]
    counts = unit_test_counts(gt, gen, torch.tensor([T, T, F]))
    assert counts == UnitTestCounts(ut_correct=1, ut_total=3, detect_correct=0, detect_total=0)
    assert counts.detect_rate == 0.0


def test_no_correct_code_returns_none_and_empty_counts() -> None:
    gt = torch.tensor([[T, F], [F, F]])
    gen = torch.tensor([[T], [F]])
    assert unit_test_rewards(gt, gen, torch.tensor([T])) is None
    assert unit_test_counts(gt, gen, torch.tensor([T])) == UnitTestCounts()


def test_format_without_reference_scores_only_the_format() -> None:
    gt = torch.tensor([[T, F], [F, F], [F, T]])  # no code passes both ground-truth tests
    gen = torch.tensor([[T, F, T], [F, F, T], [T, T, T]])
    parsed = torch.tensor([T, F, T])
    got = unit_test_rewards(gt, gen, parsed, format_without_reference=True)
    assert got is not None and got.tolist() == [0.0, -4.0, 0.0]  # every code counts as wrong: -(3 + 1)
    loose = unit_test_rewards(gt, gen, parsed, format_without_reference=True, strictly_lowest=False)
    assert loose is not None and loose.tolist() == [0.0, FORMAT_PENALTY, 0.0]
    assert unit_test_counts(gt, gen, parsed) == UnitTestCounts()  # UT / Detect still need a correct code
    # with a correct code the flag changes nothing
    gt_ok = torch.tensor([[T, T], [F, F], [F, T]])
    assert torch.equal(unit_test_rewards(gt_ok, gen, parsed, format_without_reference=True),  # type: ignore[arg-type]
                       unit_test_rewards(gt_ok, gen, parsed))  # type: ignore[arg-type]


def test_format_penalty_as_given_when_not_strict() -> None:
    gt = torch.tensor([[T], [F], [F], [F]])
    gen = torch.tensor([[T, F], [T, F], [T, F], [T, F]])
    got = unit_test_rewards(gt, gen, torch.tensor([T, F]), strictly_lowest=False)
    assert got is not None and got.tolist() == [0.0, FORMAT_PENALTY]
    strict = unit_test_rewards(gt, gen, torch.tensor([T, F]))
    assert strict is not None and strict.tolist() == [0.0, -4.0]


pass_matrices = st.integers(1, 6).flatmap(
    lambda c: st.tuples(
        st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=c, max_size=c),
        st.integers(1, 7).flatmap(
            lambda k: st.tuples(
                st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=c, max_size=c),
                st.lists(st.booleans(), min_size=k, max_size=k),
            )
        ),
    )
)


@settings(max_examples=200, deadline=None)
@given(data=pass_matrices)
def test_matches_plain_python(data: tuple[list[list[bool]], tuple[list[list[bool]], list[bool]]]) -> None:
    gt, (gen, parsed) = data
    got = unit_test_rewards(torch.tensor(gt), torch.tensor(gen), torch.tensor(parsed))
    want = plain_rewards(gt, gen, parsed)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert got.tolist() == want
    counts = unit_test_counts(torch.tensor(gt), torch.tensor(gen), torch.tensor(parsed))
    assert (counts.ut_correct, counts.ut_total, counts.detect_correct, counts.detect_total) == plain_counts(
        gt, gen, parsed
    )


@settings(max_examples=200, deadline=None)
@given(data=pass_matrices)
def test_properties(data: tuple[list[list[bool]], tuple[list[list[bool]], list[bool]]]) -> None:
    gt, (gen, parsed) = data
    gt_t, gen_t, parsed_t = torch.tensor(gt), torch.tensor(gen), torch.tensor(parsed)
    reward = unit_test_rewards(gt_t, gen_t, parsed_t)
    correct = correct_codes(gt_t)
    if reward is None:
        assert not bool(correct.any())
        return
    num_wrong = int((~correct).sum())
    max_reward = float(max(num_wrong, 1))
    assert bool((reward <= max_reward).all())
    # A perfect test (passed by every correct code, failed by every wrong one) gets the maximum.
    perfect = parsed_t & gen_t[correct].all(dim=0) & ~gen_t[~correct].any(dim=0)
    assert bool((reward[perfect] == max_reward).all())
    # Unparseable tests score strictly below every parseable test.
    if bool((~parsed_t).any()) and bool(parsed_t.any()):
        assert float(reward[~parsed_t].max()) < float(reward[parsed_t].min())
    # A parseable test is correct iff its reward is >= 0 when wrong codes exist (0 = correct but useless).
    if num_wrong:
        is_gt = parsed_t & gen_t[correct].all(dim=0)
        assert bool((reward[is_gt] >= 0).all())
        assert bool((reward[parsed_t & ~is_gt] <= 0).all())


def test_standardize_unit_test_rewards() -> None:
    r = torch.tensor([[2.0, 0.0, -2.0, 0.0], [1.0, 1.0, 1.0, float("nan")]])
    mask = torch.tensor([[T, T, T, T], [T, T, T, F]])
    z = standardize_unit_test_rewards(r, mask)
    row = [2.0, 0.0, -2.0, 0.0]
    std = math.sqrt(sum(x * x for x in row) / 4)
    torch.testing.assert_close(z[0], torch.tensor([x / std for x in row]))
    assert z[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # zero variance -> 0; padding -> 0
    one = standardize_unit_test_rewards(torch.tensor([3.0, 1.0]))
    torch.testing.assert_close(one, torch.tensor([1.0, -1.0]))


def test_code_pass_fraction() -> None:
    gt = torch.tensor([[T, T, T, T], [T, F, T, F], [F, F, F, F]])
    torch.testing.assert_close(code_pass_fraction(gt), torch.tensor([1.0, 0.5, 0.0]))
    trunc = torch.tensor([T, F, F])
    torch.testing.assert_close(code_pass_fraction(gt, truncated=trunc), torch.tensor([0.0, 0.5, 0.0]))


def test_counts_add_over_tasks() -> None:
    a = UnitTestCounts(3, 5, 1, 5)
    b = UnitTestCounts(1, 4, 0, 0)
    total = a + b
    assert total == UnitTestCounts(4, 9, 1, 5)
    assert total.ut_accuracy == pytest.approx(4 / 9) and total.detect_rate == pytest.approx(1 / 5)
    assert UnitTestCounts().ut_accuracy == 0.0


def test_validation() -> None:
    gt = torch.tensor([[T], [F]])
    with pytest.raises(ValueError, match="gt_pass"):
        unit_test_rewards(gt.float(), torch.tensor([[T], [F]]), torch.tensor([T]))
    with pytest.raises(ValueError, match="gt_pass"):
        unit_test_rewards(torch.zeros(2, 0, dtype=torch.bool), torch.tensor([[T], [F]]), torch.tensor([T]))
    with pytest.raises(ValueError, match="gen_pass"):
        unit_test_rewards(gt, torch.tensor([[T]]), torch.tensor([T]))
    with pytest.raises(ValueError, match="parsed"):
        unit_test_rewards(gt, torch.tensor([[T], [F]]), torch.tensor([T, T]))
    with pytest.raises(ValueError, match="truncated"):
        code_pass_fraction(gt, truncated=torch.tensor([T]))


def test_unit_test_targets_are_the_standardized_rewards_with_their_options() -> None:
    """``UnitTestTargets``: the coding judge's targets (options of the rule, plus the loop's ``drop_zero_rows``)."""
    import doctest

    import rlanything_core.rewards.targets as targets_module
    from rlanything_core.rewards import UnitTestTargets, standardize_unit_test_rewards

    assert doctest.testmod(targets_module).failed == 0
    gt = torch.tensor([[True], [False], [False]])
    gen = torch.tensor([[True, True, False], [False, True, False], [False, True, False]])
    parsed = torch.tensor([True, True, False])
    for penalty in (-2.0, -7.0):
        raw = unit_test_rewards(gt, gen, parsed, format_penalty=penalty)
        assert raw is not None
        got = UnitTestTargets(format_penalty=penalty)(gt, gen, parsed)
        assert got is not None and torch.equal(got, standardize_unit_test_rewards(raw))
    no_reference = (gt[1:], gen[1:], parsed)
    assert UnitTestTargets()(*no_reference) is None  # the authors' rule: no correct program, no signal
    format_only = UnitTestTargets(format_without_reference=True)(*no_reference)
    assert format_only is not None and float(format_only[2]) < 0 < float(format_only[0])
    assert UnitTestTargets().drop_zero_rows and not UnitTestTargets(drop_zero_rows=False).drop_zero_rows
    for bad in ({"drop_zero_rows": 1}, {"format_without_reference": "yes"}, {"eps": 0.0}, {"format_penalty": math.nan}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            UnitTestTargets(**bad)  # type: ignore[arg-type]
