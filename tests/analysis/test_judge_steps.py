"""A judge's step scores against exact labels: weighted AUC / balanced accuracy and the game-level bootstrap."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchmetrics.functional.classification import binary_auroc

from rlanything_core.analysis.judge_steps import (
    game_resample_weights,
    judge_intervals,
    weighted_auc,
    weighted_balanced_accuracy,
)
from rlanything_core.loop.judge_probe import balanced_accuracy


@st.composite
def scored_steps(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(scores, labels, integer weights)``: both classes present, scores on a coarse grid (ties happen)."""
    n = draw(st.integers(2, 30))
    scores = torch.tensor(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=torch.float64) / 6
    labels = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    labels[0], labels[1] = True, False
    weights = torch.tensor(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=torch.float64)
    return scores, torch.tensor(labels), weights


@settings(max_examples=200, deadline=None)
@given(scored_steps())
def test_weighted_metrics_equal_the_plain_metrics_of_the_duplicated_steps(data: tuple[torch.Tensor, ...]) -> None:
    scores, labels, weights = data
    repeat = weights.long()
    s, y = scores.repeat_interleave(repeat), labels.repeat_interleave(repeat)
    auc = float(weighted_auc(scores, labels, weights))
    bacc = float(weighted_balanced_accuracy(scores > 0.5, labels, weights))
    if bool(y.any()) and not bool(y.all()):
        assert auc == pytest.approx(float(binary_auroc(s, y.long())), abs=1e-6)
        assert bacc == pytest.approx(balanced_accuracy(s > 0.5, y), abs=1e-6)  # the reference is float32
    else:  # a class weighs nothing: undefined, never a number that looks like one
        assert math.isnan(auc) and math.isnan(bacc)


def test_auc_counts_ties_half_and_orders_by_score() -> None:
    labels = torch.tensor([True, False, True, False])
    assert float(weighted_auc(torch.tensor([0.9, 0.1, 0.8, 0.2]), labels, torch.ones(4))) == 1.0
    assert float(weighted_auc(torch.tensor([0.1, 0.9, 0.2, 0.8]), labels, torch.ones(4))) == 0.0
    assert float(weighted_auc(torch.full((4,), 0.5), labels, torch.ones(4))) == 0.5
    rows = weighted_auc(torch.tensor([0.9, 0.1, 0.8, 0.2]), labels, torch.tensor([[1.0, 1, 1, 1], [1, 0, 1, 0]]))
    assert rows.shape == (2,) and rows[0] == 1.0 and math.isnan(float(rows[1]))


def test_resamples_keep_each_type_s_game_count_and_weigh_a_game_s_steps_alike() -> None:
    games = ["a", "a", "b", "c", "c", "c", "d", "e"]
    strata = ["x", "x", "x", "y", "y", "y", "y", "z"]
    w = game_resample_weights(games, strata, samples=500, generator=torch.Generator().manual_seed(1))
    assert w.shape == (500, 8)
    per_game = {g: w[:, games.index(g)] for g in set(games)}
    for i, g in enumerate(games):
        assert torch.equal(w[:, i], per_game[g])
    assert torch.equal(per_game["a"] + per_game["b"], torch.full((500,), 2.0, dtype=torch.float64))
    assert torch.equal(per_game["c"] + per_game["d"], torch.full((500,), 2.0, dtype=torch.float64))
    assert torch.equal(per_game["e"], torch.ones(500, dtype=torch.float64))
    assert 0 < float((per_game["a"] == 0).double().mean()) < 1  # resampled, not the identity
    again = game_resample_weights(games, strata, samples=500, generator=torch.Generator().manual_seed(1))
    assert torch.equal(w, again)
    with pytest.raises(ValueError, match="strata"):
        game_resample_weights(["a", "a"], ["x", "y"], samples=3, generator=torch.Generator())


def _study(n_games: int, seed: int) -> tuple[torch.Tensor, list[str], list[str]]:
    gen = torch.Generator().manual_seed(seed)
    steps = 12
    games = [f"g{g}" for g in range(n_games) for _ in range(steps)]
    types = [f"t{g % 3}" for g in range(n_games) for _ in range(steps)]
    labels = torch.rand(len(games), generator=gen) < 0.3
    return labels, games, types


def test_a_judge_that_knows_the_labels_beats_a_coin_with_an_interval_above_zero() -> None:
    labels, games, types = _study(30, 0)
    gen = torch.Generator().manual_seed(2)
    good = torch.where(labels, 0.7, 0.3).double() + 0.25 * torch.rand(len(games), generator=gen).double()
    coin = torch.rand(len(games), generator=gen).double()
    weights = game_resample_weights(games, types, samples=400, generator=torch.Generator().manual_seed(0))
    groups = {"all": torch.ones(len(games), dtype=torch.bool), "t0": torch.tensor([t == "t0" for t in types])}
    rows = {(r.group, r.judge, r.metric): r for r in
            judge_intervals({"coin": coin, "good": good}, labels, games, groups, weights=weights, baseline="coin")}
    diff = rows[("all", "good - coin", "auc")]
    assert diff.lo > 0.2 and diff.value == pytest.approx(rows[("all", "good", "auc")].value
                                                          - rows[("all", "coin", "auc")].value)
    assert rows[("all", "good", "bacc")].lo > 0.8
    coin_auc = rows[("all", "coin", "auc")]
    assert coin_auc.lo < 0.5 < coin_auc.hi and coin_auc.lo <= coin_auc.value <= coin_auc.hi
    assert rows[("t0", "good", "auc")].games == 10 and rows[("t0", "good", "auc")].steps == 120


def test_a_judge_against_itself_differs_by_exactly_zero() -> None:
    labels, games, types = _study(12, 3)
    p = torch.rand(len(games), generator=torch.Generator().manual_seed(4)).double()
    weights = game_resample_weights(games, types, samples=100, generator=torch.Generator().manual_seed(0))
    rows = judge_intervals({"a": p, "b": p.clone()}, labels, games, {"all": torch.ones(len(games), dtype=torch.bool)},
                           weights=weights, baseline="a")  # fmt: skip
    for r in rows:
        if r.judge == "b - a":
            assert (r.value, r.lo, r.hi) == (0.0, 0.0, 0.0)


def test_bad_arguments_name_themselves() -> None:
    p, y = torch.rand(4), torch.tensor([True, False, True, False])
    with pytest.raises(ValueError, match="weights"):
        weighted_auc(p, y, torch.ones(3))
    with pytest.raises(ValueError, match="weights"):
        weighted_balanced_accuracy(p > 0.5, y, -torch.ones(4))
    with pytest.raises(ValueError, match="scores"):
        weighted_auc(p[:3], y, torch.ones(4))
    with pytest.raises(ValueError, match="baseline"):
        judge_intervals({"a": p}, y, ["g"] * 4, {}, weights=torch.ones(2, 4), baseline="b")
