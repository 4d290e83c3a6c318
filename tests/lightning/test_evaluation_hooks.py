"""``RLAnythingLoop``'s evaluations through the ``Evaluator`` protocol: who calls it, what judge-only does,
and when (the schedule: at start, every ``eval_every``, judge-only every ``judge_eval_every`` but not after the last
iteration, a final one unless just done, also when a finished run's checkpoint is resumed).

A sharded evaluator is called on every rank, any other on rank 0 alone; judge-only scoring runs only for a
``JudgeAccuracyEvaluator`` (an evaluator without ``judge_accuracy`` is skipped, not an ``AttributeError``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from _update_rows import FixedRows, cpu_runtime, ragged_rows, updates

from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
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


class _Rank(FabricRuntime):
    """One CPU process that reports the rank it is given (what the loop reads to decide who evaluates)."""

    def __init__(self, rank: int) -> None:
        super().__init__(cpu_runtime().fabric)
        self._rank = rank

    @property
    def rank(self) -> int:
        return self._rank


def _loop(evaluator: Any, tmp_path: Path, *, runtime: FabricRuntime | None = None, **kwargs: Any) -> RLAnythingLoop:
    policy, _ = updates(
        tiny_causal_lm(64, hidden=16, layers=1, seed=0), runtime=runtime, micro_batch_tokens=64,
        policy_optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )  # fmt: skip
    data = IterationData(iteration=0, policy=ragged_rows(4, 10, seed=0), judge=None)
    kwargs.setdefault("iterations", 1)
    return RLAnythingLoop(
        FixedRows(data), policy.runtime, policy, evaluator=evaluator, checkpoint_dir=tmp_path, **kwargs
    )


@pytest.mark.parametrize(("sharded", "rank", "called"), [(False, 0, True), (False, 1, False), (True, 1, True)])
def test_a_sharded_evaluator_runs_on_every_rank_any_other_on_rank_zero(
    tmp_path: Path, sharded: bool, rank: int, called: bool
) -> None:
    evaluator = Scores()
    evaluator.sharded = sharded
    loop = _loop(evaluator, tmp_path, runtime=_Rank(rank))
    loop.evaluate(3)
    assert evaluator.calls == (["full"] if called else [])
    assert loop.evaluations == ([{"eval/split/success_rate": 0.5, "eval/iteration": 3.0}] if called else [])


def test_judge_only_scoring_needs_a_judge_accuracy_evaluator(tmp_path: Path) -> None:
    plain, with_judge = Scores(), ScoresAndJudge()
    _loop(plain, tmp_path).evaluate(2, judge_only=True)
    assert plain.calls == []  # skipped: it cannot score the judge alone
    loop = _loop(with_judge, tmp_path)
    loop.evaluate(2, judge_only=True)
    assert with_judge.calls == ["judge"] and loop.evaluations == []  # judge-only scores are logged, not kept


def test_an_evaluator_outside_the_protocol_is_refused_when_the_loop_is_built(tmp_path: Path) -> None:
    def plain() -> dict[str, float]:  # callable, but no `sharded`: evaluate() could not tell who calls it
        return {}

    with pytest.raises(TypeError, match="sharded"):
        _loop(plain, tmp_path)


def test_the_schedule_at_start_every_n_judge_only_between_and_a_final_one(tmp_path: Path) -> None:
    evaluator = ScoresAndJudge()
    loop = _loop(evaluator, tmp_path, iterations=5, eval_every=2, judge_eval_every=1, eval_at_start=True)
    loop.run()
    # 0: start; 1 judge; 2 full; 3 judge; 4 full; 5: the last iteration gets the final full one, no judge-only
    assert evaluator.calls == ["full", "judge", "full", "judge", "full", "full"]
    assert [e["eval/iteration"] for e in loop.evaluations] == [0.0, 2.0, 4.0, 5.0]


def test_the_final_evaluation_is_not_repeated_and_a_finished_run_resumed_gets_it(tmp_path: Path) -> None:
    evaluator = Scores()
    loop = _loop(evaluator, tmp_path, iterations=2, eval_every=1)
    loop.run()
    assert evaluator.calls == ["full", "full"]  # after 1, after 2; the final one was just done
    again = Scores()  # rerun after a kill during the final evaluation: nothing to train, the evaluation still runs
    resumed = _loop(again, tmp_path, iterations=2, eval_every=1)
    resumed.run()
    assert resumed.completed == 2 and resumed.update_history[-1]["iteration"] == 1.0
    assert again.calls == ["full"] and resumed.evaluations[-1]["eval/iteration"] == 2.0
