import torch
from hypothesis import given
from hypothesis import strategies as st

from rlanything_core.masking import compact_index, masked_mean, masked_sum


@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.booleans()), max_size=30))
def test_masked_reductions_ignore_padding_even_nan(cells: list[tuple[float, bool]]) -> None:
    values = torch.tensor([v for v, _ in cells], dtype=torch.float64)
    mask = torch.tensor([m for _, m in cells], dtype=torch.bool)
    poisoned = torch.where(mask, values, torch.full_like(values, float("nan")))
    kept = [v for v, m in cells if m]
    assert float(masked_sum(poisoned, mask)) == sum(kept) or abs(float(masked_sum(poisoned, mask)) - sum(kept)) < 1e-9
    expected_mean = sum(kept) / len(kept) if kept else 0.0
    assert abs(float(masked_mean(poisoned, mask)) - expected_mean) < 1e-9


def test_masked_mean_all_masked_row_is_zero_not_nan() -> None:
    out = masked_mean(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[False, False], [True, False]]), dim=1)
    assert out.tolist() == [0.0, 3.0]


def test_compact_index_maps_sparse_ids_densely() -> None:
    dense, k = compact_index(torch.tensor([10**12, 5, 10**12, 7]))
    assert k == 3
    assert dense.tolist() == [2, 0, 2, 1]
