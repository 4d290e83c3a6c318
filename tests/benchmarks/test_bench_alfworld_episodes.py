"""The ALFWorld episodes-per-second benchmark of the encoder policy's speed options (``bench_alfworld_episodes``)."""

from __future__ import annotations

import pytest

from benchmarks.bench_alfworld_episodes import main, parse_variant


def test_variants_parse_and_bad_ones_are_clear_errors() -> None:
    assert parse_variant("bfloat16/64") == ("bfloat16", 64)
    assert parse_variant("float32/128") == ("float32", 128)
    with pytest.raises(ValueError, match="frozen_precision"):
        parse_variant("int8/64")
    with pytest.raises(ValueError, match="variant"):
        parse_variant("float32")
    with pytest.raises(ValueError, match="variant"):
        parse_variant("float32/2")


@pytest.mark.alfworld
@pytest.mark.slow
def test_one_round_prints_a_ratio_per_variant(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--games", "1", "--rounds", "1", "--max-steps", "2", "--votes", "1", "--variants", "float32/128",
          "bfloat16/64"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    fields = dict(f.split("=") for f in last.split())
    assert float(fields["episodes_per_cpu_s"]) > 0
    assert fields["float32/128"] == "1.00" and float(fields["bfloat16/64"]) > 0
