"""``benchmarks/batch_path.py``: which types carry an iteration's data, and when a function counts as handed them."""

from __future__ import annotations

import sys

import pytest

from benchmarks.batch_path import CARRIERS, _holds_carrier, carrier_types, crossed_files
from rlanything_core.records import Episode
from rlanything_core.types import RolloutBatch


def test_the_carriers_exist_and_a_missing_one_is_skipped() -> None:
    found = carrier_types()
    assert RolloutBatch in found and Episode in found and len(found) == len(CARRIERS)
    assert carrier_types(("rlanything_core.types:RolloutBatch", "rlanything_core.types:NoSuchCarrier")) == (
        RolloutBatch,
    )


def test_a_frame_holding_a_carrier_or_a_list_of_them_counts() -> None:
    def frame_of(x: object, xs: object = ()):  # type: ignore[no-untyped-def]
        return sys._getframe()  # its locals: the arguments

    class Other:
        pass

    carriers = (Other,)
    assert _holds_carrier(frame_of(Other()), carriers)
    assert _holds_carrier(frame_of(1, [Other(), 1]), carriers)
    assert not _holds_carrier(frame_of(1, [1, Other()]), carriers)


@pytest.mark.slow
@pytest.mark.alfworld
def test_a_smoke_iteration_crosses_the_loop_the_update_and_the_checkpoint() -> None:
    crossed = crossed_files([])
    assert set(crossed.batch_files) <= set(crossed.files)
    for part in ("rlanything_core/adaptation/pool.py", "rlanything_core/loop/rlanything_loop.py",
                 "rlanything_core/training/update.py", "rlanything_core/lightning/checkpoint.py"):  # fmt: skip
        assert part in crossed.files, part
    assert "rlanything_core/types.py" in crossed.batch_files
