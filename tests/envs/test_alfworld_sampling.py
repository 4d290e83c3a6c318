"""Stratified evaluation games: every task type in proportion, deterministic, prefixes spread over the types."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.envs.alfworld import TASK_TYPES, list_games, proportional_allocation, stratified_sample

sizes = st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 30), min_size=1)


@given(sizes, st.data())
def test_the_allocation_sums_to_n_within_each_stratum_and_near_its_share(counts, data):
    total = sum(counts.values())
    n = data.draw(st.integers(0, total))
    take = proportional_allocation(counts, n)
    assert sum(take.values()) == n and set(take) == set(counts)
    present = [k for k, c in counts.items() if c > 0]
    for k, c in counts.items():
        assert 0 <= take[k] <= c
        if n >= len(present) and c > 0:
            assert take[k] >= 1  # every stratum is represented when n allows
        # within one draw of the proportional share, plus the one draw each stratum may get up front
        assert abs(take[k] - n * c / max(total, 1)) < 2 + (1 if n >= len(present) else 0)


def test_the_allocation_refuses_impossible_requests():
    with pytest.raises(ValueError, match="n: expected"):
        proportional_allocation({"a": 2}, 3)
    with pytest.raises(ValueError, match="counts"):
        proportional_allocation({"a": -1}, 0)


@given(st.lists(st.sampled_from("xyz"), min_size=1, max_size=60), st.data(), st.integers(0, 1000))
def test_a_sample_is_distinct_deterministic_and_proportional(strata, data, seed):
    items = list(enumerate(strata))
    n = data.draw(st.integers(0, len(items)))
    picked = stratified_sample(items, n, stratum=lambda it: it[1], seed=seed)
    assert len(picked) == n == len(set(picked))
    assert picked == stratified_sample(items, n, stratum=lambda it: it[1], seed=seed)
    expected = proportional_allocation(Counter(strata), n)
    assert Counter(s for _, s in picked) == Counter({k: v for k, v in expected.items() if v})


@pytest.mark.alfworld
def test_evaluation_games_cover_all_six_task_types_not_the_first_games_of_the_split():
    games = list_games("valid_seen")
    first = {g.task_type for g in games[:32]}
    assert len(first) < 6  # the split is sorted by task type: its first games hold few types
    picked = stratified_sample(games, 32, stratum=lambda g: g.task_type, seed=0)
    assert {g.task_type for g in picked} == set(TASK_TYPES.values())
    counts = Counter(g.task_type for g in games)
    for task_type, k in Counter(g.task_type for g in picked).items():
        assert abs(k - 32 * counts[task_type] / len(games)) < 1.5
    assert len({g.task_type for g in picked[:6]}) >= 5  # a prefix (the planner-labelled episodes) is spread too
    assert picked != stratified_sample(games, 32, stratum=lambda g: g.task_type, seed=1)
