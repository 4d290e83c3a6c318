"""A sharded checkpoint written in the background (``atomic_save(..., asynchronous=True)``), one CPU process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("_async_save_worker.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("async_save")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "MASTER_PORT": str(29600 + os.getpid() % 300)}
    proc = subprocess.run([sys.executable, str(WORKER), str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(json.loads((out / "result.json").read_text()), out=str(out))


def test_the_save_returns_with_the_write_in_flight_and_the_link_moves_when_it_completes(result: dict[str, Any]) -> None:
    assert result["pending_after_save"] == 1  # the save returned with its write handed to the background
    assert result["moved"] and result["first_removed"]  # last.ckpt moved to the new save, the old one went
    assert len(result["shard_dirs"]) == 1


def test_the_background_save_reads_back_and_resumes_like_a_synchronous_one(result: dict[str, Any]) -> None:
    assert result["loop"] == result["rest_loop"] == {"completed": 4}
    assert result["weights_equal"] and result["loaded_equal"]
    assert result["optimizer_keys"]  # the optimizer's state is in it, keyed by parameter name


def test_the_last_save_of_a_run_is_complete_and_linked_after_the_process_exits(result: dict[str, Any]) -> None:
    from rlanything_core.lightning.checkpoint import read_checkpoint, resume_path

    last = Path(result["out"]) / "last.ckpt"
    assert resume_path(last) == last
    assert read_checkpoint(last)["loop"] == {"completed": 5}


def test_asynchronous_saves_are_refused_for_several_processes() -> None:
    from types import SimpleNamespace

    from rlanything_core.lightning.checkpoint import atomic_save

    fabric: Any = SimpleNamespace(strategy=SimpleNamespace(_save_distributed_checkpoint=True), world_size=2)
    with pytest.raises(ValueError, match="asynchronous"):
        atomic_save(fabric, Path("/nonexistent/last.ckpt"), {}, asynchronous=True)
