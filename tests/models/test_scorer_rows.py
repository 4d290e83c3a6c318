"""The token-row layout of scorer decisions: encode -> right-padded rows -> decode is the identity."""

import pytest
import torch

from rlanything_core.models.scorer_rows import ScorerRowLayout
from rlanything_core.types import rows_from_sequences

LAYOUT = ScorerRowLayout(100)


def test_rows_decode_to_what_was_encoded() -> None:
    decisions = [((5, 6, 7), ((10, 11), (12,), (13, 14, 15)), 2), ((8,), ((20,),), 0), ((9, 9), (), 1)]
    encoded = [LAYOUT.encode(text, cands, choice) for text, cands, choice in decisions]
    index = [(n, 0, -1) for n in range(3)]
    rows = rows_from_sequences([p for p, _ in encoded], [r for _, r in encoded], index, pad_id=0)
    for n, (text, cands, choice) in enumerate(decisions):
        row = LAYOUT.decode(rows.input_ids[n], rows.attention_mask[n], rows.response_mask[n])
        assert (row.text, row.candidates, row.choice) == (text, cands, choice)
        assert bool(rows.response_mask[n, row.position]) and int(rows.response_mask[n].sum()) == 1


def test_bad_decisions_are_refused() -> None:
    with pytest.raises(ValueError, match="choice"):
        LAYOUT.encode((1,), ((2,), (3,)), 2)
    with pytest.raises(ValueError, match="token ids"):
        LAYOUT.encode((100,), ((2,),), 0)


def test_a_row_without_a_response_has_no_choice() -> None:
    row = LAYOUT.decode(torch.tensor([5, 100, 6, 0]), torch.tensor([True, True, True, False]),
                        torch.zeros(4, dtype=torch.bool))
    assert row.choice == -1 and row.position == -1 and row.candidates == ((6,),)
