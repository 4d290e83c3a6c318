"""Difficulty critic and acceptance rule (arXiv 2602.02488, M5-M6)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.adaptation import DifficultyCritic, Direction, accept_rewrite
from rlanything_core.adaptation.difficulty import RATE_TOLERANCE as TOL

rates = st.floats(0, 1)
bands = st.tuples(st.floats(0, 1), st.floats(0, 1)).filter(lambda b: b[0] < b[1])


def plain_direction(rate: float, low: float, high: float) -> Direction:
    """Edges inclusive; a rate within TOL of an edge is on it (float32-rounded rates)."""
    if rate >= high - TOL:
        return Direction.HARDER
    if rate <= low + TOL:
        return Direction.EASIER
    return Direction.KEEP


def test_direction_edges_are_inclusive() -> None:
    critic = DifficultyCritic()
    assert critic.direction(0.8) is Direction.HARDER
    assert critic.direction(0.2) is Direction.EASIER
    assert critic.direction(0.79) is Direction.KEEP
    assert critic.direction(0.21) is Direction.KEEP
    assert critic.direction(1.0) is Direction.HARDER
    assert critic.direction(0.0) is Direction.EASIER
    # 8 rollouts: 2..6 successes are kept, 0, 1, 7, 8 are rewritten (1/8 = 0.125 <= 0.2).
    assert [critic.direction(k / 8) for k in range(9)] == [Direction.EASIER] * 2 + [Direction.KEEP] * 5 + [
        Direction.HARDER
    ] * 2


@settings(max_examples=200, deadline=None)
@given(values=st.lists(rates, max_size=20), band=bands)
def test_directions_vectorized_matches_scalar(values: list[float], band: tuple[float, float]) -> None:
    critic = DifficultyCritic(band=band)
    want = [plain_direction(v, *band) for v in values]
    assert critic.directions(values) == want
    assert critic.directions(torch.tensor(values, dtype=torch.float64)) == want


def test_paper_examples() -> None:
    assert accept_rewrite(Direction.HARDER, 1.0, 0.875)  # coding example: accepted although still above the band
    assert accept_rewrite(Direction.HARDER, 0.875, 0.5)  # AlfWorld example
    assert accept_rewrite(Direction.EASIER, 0.0, 0.25)  # OSWorld example


def test_strict_edges_differ_from_authors_code() -> None:
    assert not accept_rewrite(Direction.HARDER, 1.0, 0.2)  # authors' code accepts acc' >= 0.2
    assert not accept_rewrite(Direction.EASIER, 0.0, 0.8)  # authors' code accepts acc' <= 0.8
    assert not accept_rewrite(Direction.HARDER, 0.9, 0.9)  # no change is not an improvement
    assert not accept_rewrite(Direction.EASIER, 0.1, 0.1)
    assert not accept_rewrite(Direction.EASIER, 0.0, 0.0)  # unsolvable rewrite
    assert not accept_rewrite(Direction.HARDER, 0.9, 0.0, band=(0.0, 0.8))  # never 0, even with low = 0


@settings(max_examples=500, deadline=None)
@given(acc=rates, acc_new=rates, band=bands, direction=st.sampled_from([Direction.HARDER, Direction.EASIER]))
def test_acceptance_properties(acc: float, acc_new: float, band: tuple[float, float], direction: Direction) -> None:
    low, high = band
    accepted = accept_rewrite(direction, acc, acc_new, band=band)
    plain = acc_new > TOL and (
        low + TOL < acc_new < acc - TOL if direction is Direction.HARDER else acc + TOL < acc_new < high - TOL
    )
    assert accepted == plain
    if accepted:
        assert acc_new > 0
        if direction is Direction.HARDER:
            assert acc_new < acc and acc_new > low  # strictly toward the band, never past its low edge
        else:
            assert acc_new > acc and acc_new < high
        # The distance to the band never grows.
        dist = max(low - acc, acc - high, 0.0)
        dist_new = max(low - acc_new, acc_new - high, 0.0)
        assert dist_new <= dist


@settings(max_examples=200, deadline=None)
@given(acc=st.integers(0, 32).map(lambda k: k / 32), acc_new=st.integers(0, 32).map(lambda k: k / 32))
def test_rewrites_requested_by_the_critic_move_toward_the_band(acc: float, acc_new: float) -> None:
    critic = DifficultyCritic()
    direction = critic.direction(acc)
    if direction is Direction.KEEP:
        with pytest.raises(ValueError, match="direction"):
            accept_rewrite(direction, acc, acc_new)
        return
    if accept_rewrite(direction, acc, acc_new):
        low, high = critic.band
        # Success rates of k/32 rollouts: the rewrite gets strictly closer to the band's centre, or lands inside.
        assert abs(acc_new - (low + high) / 2) < abs(acc - (low + high) / 2) or low < acc_new < high
        assert (acc_new < acc) if direction is Direction.HARDER else (acc_new > acc)


@pytest.mark.parametrize("band", [(0.8, 0.2), (0.5, 0.5), (-0.1, 0.5), (0.2, 1.1), (0.2,), "ab", (0.2, float("nan"))])
def test_bad_bands(band: object) -> None:
    with pytest.raises(ValueError, match="band"):
        DifficultyCritic(band=band)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="band"):
        accept_rewrite(Direction.HARDER, 0.9, 0.5, band=band)  # type: ignore[arg-type]


def test_bad_rates_and_direction() -> None:
    critic = DifficultyCritic()
    for bad in (-0.1, 1.5, float("nan"), True, "x"):
        with pytest.raises(ValueError, match="success_rate"):
            critic.direction(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="acc_new"):
        accept_rewrite(Direction.HARDER, 0.9, 1.2)
    with pytest.raises(ValueError, match="acc"):
        accept_rewrite(Direction.HARDER, -1.0, 0.5)
    with pytest.raises(ValueError, match="direction"):
        accept_rewrite("harder", 0.9, 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rates"):
        critic.directions(torch.zeros(2, 2))
