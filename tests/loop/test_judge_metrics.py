import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.loop.evaluation import balanced_accuracy

labels = st.lists(st.booleans(), min_size=1, max_size=40)


@given(labels, st.booleans())
def test_a_constant_judge_scores_one_half_whenever_both_labels_occur(actual, constant):
    target = torch.tensor(actual)
    score = balanced_accuracy(torch.full_like(target, constant), target)
    if target.any() and not target.all():
        assert score == 0.5
    else:  # one class only: the constant is right on all of it or wrong on all of it
        assert score == float(bool(target[0]) == constant)


@given(labels)
def test_perfect_and_inverted_judges_score_one_and_zero(actual):
    target = torch.tensor(actual)
    assert balanced_accuracy(target.clone(), target) == 1.0
    assert balanced_accuracy(~target, target) == 0.0


def test_it_weights_each_class_equally_where_plain_accuracy_follows_the_majority():
    actual = torch.tensor([False] * 9 + [True])
    predicted = torch.tensor([False] * 9 + [False])  # right on 9 of 10 steps, blind to the one good step
    assert balanced_accuracy(predicted, actual) == pytest.approx(0.5)
    predicted[0] = True  # one false alarm, the good step still missed
    assert balanced_accuracy(predicted, actual) == pytest.approx((8 / 9 + 0) / 2)


def test_it_refuses_mismatched_or_empty_inputs():
    with pytest.raises(ValueError, match="predicted, actual"):
        balanced_accuracy(torch.tensor([True]), torch.tensor([True, False]))
    with pytest.raises(ValueError, match="predicted, actual"):
        balanced_accuracy(torch.tensor([], dtype=torch.bool), torch.tensor([], dtype=torch.bool))
