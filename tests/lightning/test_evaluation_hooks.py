"""``AgentModule.evaluate`` through the ``Evaluator`` protocol (issue 15): who calls it, and what judge-only does.

A sharded evaluator is called on every rank, any other on rank 0 alone; judge-only scoring runs only for a
``JudgeAccuracyEvaluator`` (an evaluator without ``judge_accuracy`` is skipped, not an ``AttributeError``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlanything_core.lightning.settings import AgentModule
from rlanything_core.models.tiny import tiny_causal_lm


class Scores:
    """An evaluator without a judge-only score; counts its calls."""

    sharded = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self) -> dict[str, float]:
        self.calls.append("full")
        return {"split/success_rate": 0.5}


class ScoresAndJudge(Scores):
    def judge_accuracy(self) -> dict[str, float]:
        self.calls.append("judge")
        return {"split/judge_process_acc": 0.75}


def _module(evaluator: Scores, *, rank_zero: bool) -> AgentModule:
    module = AgentModule(tiny_causal_lm(64, hidden=16, layers=1), evaluator=evaluator)
    trainer = SimpleNamespace(is_global_zero=rank_zero, loggers=[])
    module.__dict__["_trainer"] = trainer  # no Trainer run here: what evaluate() reads of it
    return module


@pytest.mark.parametrize(("sharded", "rank_zero", "called"), [(False, True, True), (False, False, False),
                                                               (True, False, True)])
def test_a_sharded_evaluator_runs_on_every_rank_any_other_on_rank_zero(sharded: bool, rank_zero: bool,
                                                                        called: bool) -> None:
    evaluator = Scores()
    evaluator.sharded = sharded
    module = _module(evaluator, rank_zero=rank_zero)
    module.evaluate(3)
    assert evaluator.calls == (["full"] if called else [])
    assert module.evaluations == ([{"eval/split/success_rate": 0.5, "eval/iteration": 3.0}] if called else [])


def test_judge_only_scoring_needs_a_judge_accuracy_evaluator() -> None:
    plain, with_judge = Scores(), ScoresAndJudge()
    _module(plain, rank_zero=True).evaluate(2, judge_only=True)
    assert plain.calls == []  # skipped: it cannot score the judge alone
    module = _module(with_judge, rank_zero=True)
    module.evaluate(2, judge_only=True)
    assert with_judge.calls == ["judge"] and module.evaluations == []  # judge-only scores are logged, not kept


def test_an_evaluator_outside_the_protocol_is_refused_when_the_module_is_built() -> None:
    def plain() -> dict[str, float]:  # callable, but no `sharded`: evaluate() could not tell who calls it
        return {}

    with pytest.raises(TypeError, match="sharded"):
        AgentModule(tiny_causal_lm(64, hidden=16, layers=1), evaluator=plain)  # type: ignore[arg-type]
