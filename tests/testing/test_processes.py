"""rlanything_core.testing.processes.run_ranks: the distributed tests' launcher fails loudly, never hangs."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from rlanything_core.testing.processes import run_ranks


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_ranks_that_all_succeed_return_quietly() -> None:
    run_ranks([_python("pass"), _python("print('rank 1')")], timeout=60)


def test_a_failing_rank_is_named_with_its_stderr() -> None:
    with pytest.raises(AssertionError, match=r"ranks \[1\] failed") as info:
        run_ranks([_python("pass"), _python("import sys; sys.exit('collective mismatch on rank 1')")], timeout=60)
    assert "collective mismatch on rank 1" in str(info.value) and "[rank 0]" not in str(info.value)


def test_a_hanging_rank_times_out_and_every_rank_is_killed() -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_ranks([_python("import time; time.sleep(600)"), _python("pass")], timeout=2)
    assert time.monotonic() - started < 60  # the sleeper was killed, not waited for
