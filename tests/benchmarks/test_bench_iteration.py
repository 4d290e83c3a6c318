"""``benchmarks/bench_iteration.py``: exclusive CPU seconds per phase, the phase of the frozen bottom by its consumer,
the per-step rates the budget estimator reads, and the estimator's use of the measured rates (of its model only)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_iteration import PhaseClock, rates


class _Ticks:
    """A clock the test advances by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_phase_is_charged_its_own_time_only_and_the_frozen_bottom_its_consumer() -> None:
    ticks = _Ticks()
    clock = PhaseClock(ticks)

    def bottom() -> None:
        ticks.now += 2.0

    def judge() -> None:
        ticks.now += 1.0
        timed_bottom()
        ticks.now += 0.5

    timed_bottom = clock.wrap(bottom, "frozen bottom")
    timed_judge = clock.wrap(judge, "judge scoring")

    def evaluate() -> None:
        ticks.now += 0.25
        timed_judge()

    ticks.now += 3.0  # outside every phase: "other"
    timed_judge()
    clock.wrap(evaluate, "evaluation")()
    timed_bottom()  # no consumer around it
    clock._charge()
    assert dict(clock.seconds["iteration"]) == {
        "other": 3.0, "judge scoring": 1.5, "frozen bottom (judge)": 2.0, "frozen bottom (other)": 2.0,
    }  # fmt: skip
    assert dict(clock.seconds["evaluation"]) == {"other": 0.25, "judge scoring": 1.5, "frozen bottom (judge)": 2.0}


def test_the_rates_divide_each_phase_by_its_own_count() -> None:
    result = {
        "seconds": {
            "iteration": {"policy scoring": 3.0, "frozen bottom (rollouts)": 1.0, "engine resets + steps": 2.0,
                          "judge scoring": 1.0, "frozen bottom (judge)": 1.0, "update": 4.0,
                          "frozen bottom (update)": 1.0, "checkpoint, adaptation, rows": 0.5},
            "evaluation": {"policy scoring": 4.0, "engine resets + steps": 2.0, "planner labels": 6.0},
        },
        "counts": {"iteration": {"steps": 100, "judged_steps": 100, "trained_rows": 40},
                   "evaluation": {"steps": 100, "planner_steps": 3}},
    }  # fmt: skip
    got = rates(result)
    assert got == {"policy_s": 8.0 / 200, "engine_s": 4.0 / 200, "judge_s": 2.0 / 100, "update_s": 5.0 / 100,
                   "planner_s": 2.0, "iteration_s": 0.5}  # fmt: skip


def test_an_update_that_trained_no_row_leaves_the_estimators_update_cost_in_place() -> None:
    """Without wins (no warm start) no group carries an advantage: a measured 0 would price training's updates at 0."""
    from benchmarks.bench_iteration import _mean_rates, profile_minutes
    from rlanything_core.ablation.budget import StepCosts

    idle = {
        "seconds": {"iteration": {"policy scoring": 1.0, "update": 0.001}},
        "counts": {"iteration": {"steps": 10, "judged_steps": 10, "trained_rows": 0}},
    }
    trained = {**idle, "counts": {"iteration": {"steps": 10, "judged_steps": 10, "trained_rows": 5}}}
    assert "update_s" not in rates(idle)
    assert rates(trained)["update_s"] == 0.001 / 10
    assert "update_s" not in _mean_rates([trained, idle])  # only a rate every round measured
    # the estimate keeps the estimator's update cost: more than with the update priced at (almost) nothing
    without = rates(idle)
    assert profile_minutes(without)["default"] > profile_minutes({**without, "update_s": 0.0})["default"]
    assert StepCosts().update_s > 0


def test_the_estimator_uses_the_measured_rates_of_its_model_only(tmp_path: Path) -> None:
    from rlanything_core.ablation.budget import StepCosts, measured_costs

    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"measured": {"model": "minilm-scorer"}, "rates": {"judge_s": 0.5, "unknown": 1}}))
    assert measured_costs("minilm-scorer", path) == StepCosts(judge_s=0.5)
    assert measured_costs("tiny", path) == StepCosts()  # measured on another model
    assert measured_costs("minilm-scorer", tmp_path / "none.json") == StepCosts()
