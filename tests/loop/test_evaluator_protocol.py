"""Every evaluator implements ``loop.protocol.Evaluator`` (one typed contract, no duck-typing).

The Lightning module types its evaluator with the protocol and reads ``sharded`` from it; only evaluators that can
score the judge alone are ``JudgeAccuracyEvaluator``s. The assignments to protocol-typed names below are checked by
mypy (``test_mypy_accepts_every_evaluator_as_the_protocol``), the ``isinstance`` checks at run time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlanything_core.loop.coding_evaluation import CodingEvaluator
from rlanything_core.loop.evaluation import AgentEvaluator
from rlanything_core.loop.protocol import Evaluator, JudgeAccuracyEvaluator
from rlanything_core.loop.sharded_evaluation import sharded_evaluator

REPO = Path(__file__).resolve().parents[2]

# static conformance: mypy rejects these lines if a class stops implementing its protocol
AGENT: type[JudgeAccuracyEvaluator] = AgentEvaluator
CODING: type[Evaluator] = CodingEvaluator


def _agent() -> AgentEvaluator:
    return AgentEvaluator(object(), [])  # type: ignore[arg-type]  # nothing is played: the contract only


def _coding() -> CodingEvaluator:
    return CodingEvaluator(object(), [])  # type: ignore[arg-type]


def test_every_evaluator_is_an_evaluator_run_by_rank_zero_alone_by_default() -> None:
    for evaluator in (_agent(), _coding()):
        assert isinstance(evaluator, Evaluator)
        assert evaluator.sharded is False


def test_only_the_agent_evaluator_scores_the_judge_alone() -> None:
    assert isinstance(_agent(), JudgeAccuracyEvaluator)
    assert not isinstance(_coding(), JudgeAccuracyEvaluator)


def test_the_sharded_copy_says_sharded_and_leaves_the_original_alone() -> None:
    plain = _agent()
    sharded = sharded_evaluator(plain)
    assert isinstance(sharded, JudgeAccuracyEvaluator) and sharded.sharded is True
    assert plain.sharded is False


@pytest.mark.slow  # a cold mypy cache takes about a minute (torch's stubs); `make lint` leaves it warm
def test_mypy_accepts_every_evaluator_as_the_protocol() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(  # tests/ is outside the configured mypy run: check this file explicitly
        [sys.executable, "-m", "mypy", "--follow-imports=silent", __file__],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
