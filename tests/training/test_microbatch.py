from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.training.microbatch import pack_by_length, padded_token_count


@given(st.lists(st.integers(0, 300), max_size=60), st.integers(1, 2000))
def test_every_row_once_and_budget_respected(lengths: list[int], budget: int) -> None:
    batches = pack_by_length(lengths, max_tokens=budget)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    for b in batches:
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= budget


@given(st.lists(st.integers(1, 300), min_size=1, max_size=60))
def test_never_pads_more_than_pad_to_longest(lengths: list[int]) -> None:
    batches = pack_by_length(lengths, max_tokens=max(lengths) * 4)
    assert padded_token_count(lengths, batches) <= len(lengths) * max(lengths)
