"""Reward hacking: wrong programs that try to fake a pass score 0 passes (the attacks are in reward_hacks.py)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlanything_core.sandbox import FunctionalTest, Sandbox, SandboxConfig, StdinTest, Verdict, bwrap_status
from rlanything_core.testing.reward_hacks import HACKS, SETUP, STDIN_CASES, Hack

pytestmark = [
    pytest.mark.skipif(os.getuid() != 0, reason="the uid separation needs root (CI runs as root)"),
    pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap not working here"),
]


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(time_limit_s=3.0, memory_mb=512, output_limit_bytes=1 << 20, use_bwrap=True))


@pytest.fixture(scope="module")
def run_dir() -> Iterator[Path]:
    """A training run directory on the host holding the expected outputs (as the coding loop's task files do)."""
    d = Path(tempfile.mkdtemp(prefix="rla_run_", dir="/var/tmp"))
    os.chmod(d, 0o755)
    tasks = d / "tasks.jsonl"
    tasks.write_text(json.dumps({"tests": [{"input": i, "output": o} for i, o in STDIN_CASES]}) + "\n")
    os.chmod(tasks, 0o644)
    yield d
    shutil.rmtree(d)


def suite_for(hack: Hack) -> list[FunctionalTest] | list[StdinTest]:
    if hack.kind == "functional":
        return [FunctionalTest(hack.code, setup=SETUP), FunctionalTest("assert add(5, 6) == 11\n", setup=SETUP)]
    return [StdinTest(i, o) for i, o in STDIN_CASES]


def test_a_correct_program_passes_the_same_tests(sandbox: Sandbox) -> None:
    """The suite's tests can pass: the zeros below are the sandbox's doing, not broken tests."""
    good = SETUP + "\ndef add(a, b):\n    return a + b\n"
    assert sandbox.run(good, suite_for(Hack("good", "functional", good))).all_passed
    stdin_good = "print(sum(map(int, input().split())))\n"
    assert sandbox.run(stdin_good, suite_for(Hack("good", "stdin", stdin_good))).all_passed


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_hack_scores_zero(sandbox: Sandbox, run_dir: Path, hack: Hack) -> None:
    result = sandbox.run(hack.program, suite_for(hack))
    assert result.num_passed == 0, (hack.name, result.verdicts, [t.detail for t in result.tests])
    assert all(v is not Verdict.SANDBOX_ERROR for v in result.verdicts), [t.detail for t in result.tests]
