"""``AgentLoopDriver`` with a stub collector and a stub vote sampler: what reaches the rows.

The judge returns judged copies (the collector's episodes stay unjudged), and the judge targets'
``drop_zero_rows`` decides whether judge rows with a zero consistency target are trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.advantages.integrators import IntegratedIntegrator
from rlanything_core.collect.agent import RolloutStats
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.loop.driver import AgentLoopDriver
from rlanything_core.loop.protocol import source_iteration
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.rewards.targets import ConsistencyTargets

# per rollout: step 0's three votes disagree, step 1's all say +1 (equal targets: standardized to 0)
VOTES = [1, -1, 1, 1, 1, 1]


class TwoRollouts:
    """Plays each task twice, won then lost, two steps each; keeps what it returned."""

    group_size = 2

    def __init__(self) -> None:
        self.returned: list[Episode] = []

    def collect(self, tasks: Sequence[Any], *, seed: int, task_ids: Sequence[str],
                group_ids: Sequence[int]) -> tuple[list[Episode], RolloutStats]:
        step = lambda t: AgentStep(f"obs {t}", ["look"], [1, 2], [3], [-0.5], "look", "look")  # noqa: E731
        self.returned = [Episode(tid, g, "goal", [step(0), step(1)], won=won)
                         for tid, g in zip(task_ids, group_ids) for won in (True, False)]
        return self.returned, RolloutStats(episodes=len(self.returned))


class PatternVotes:
    def sample(self, backend: Any, prompts: Sequence[Any], seeds: Sequence[int]) -> list[JudgeSample]:
        return [JudgeSample(VOTES[i % len(VOTES)], "", [5], [6], []) for i in range(len(seeds))]


def _driver(tmp_path: Path, targets: ConsistencyTargets) -> tuple[AgentLoopDriver, TwoRollouts]:
    collector = TwoRollouts()
    driver = AgentLoopDriver(
        collector=collector,  # type: ignore[arg-type]
        judge=JudgeCollector(object(), num_votes=3, votes=PatternVotes()),
        integrator=IntegratedIntegrator(), judge_targets=targets,
        pool=TaskPool.create(tmp_path, [TaskSpec("t0", "alfworld", "t0")]), to_env_task=lambda spec: spec,
        adaptation=None, tasks_per_iteration=1, seed=0, pad_id=0,
    )
    driver.save_initial_pool()
    return driver, collector


@pytest.mark.parametrize("drop", [True, False])
def test_the_judge_targets_decide_whether_zero_target_rows_train(tmp_path: Path, drop: bool) -> None:
    driver, _ = _driver(tmp_path, ConsistencyTargets(drop_zero_rows=drop))
    data = source_iteration(driver, 0)
    assert data.judge is not None
    zero = int((data.judge.advantages == 0).sum())
    assert (data.judge.num_rows, zero) == ((6, 0) if drop else (12, 6))


def test_the_collected_episodes_are_not_judged_in_place(tmp_path: Path) -> None:
    driver, collector = _driver(tmp_path, ConsistencyTargets())
    data = source_iteration(driver, 0)
    assert data.judge is not None and data.metrics["judge_votes"] == 12.0  # the rows come from the judged copies
    assert collector.returned and all(not s.judge for e in collector.returned for s in e.steps)


class UnevenRollouts(TwoRollouts):
    """Won in one step, lost in three (failed episodes run longer, as at the step limit)."""

    def collect(self, tasks: Sequence[Any], *, seed: int, task_ids: Sequence[str],
                group_ids: Sequence[int]) -> tuple[list[Episode], RolloutStats]:
        step = lambda t: AgentStep(f"obs {t}", ["look"], [1, 2], [3], [-0.5], "look", "look")  # noqa: E731
        self.returned = [Episode(tid, g, "goal", [step(t) for t in range(n)], won=won)
                         for tid, g in zip(task_ids, group_ids) for won, n in ((True, 1), (False, 3))]
        return self.returned, RolloutStats(episodes=len(self.returned))


@pytest.mark.parametrize("balance", [False, True])
def test_balanced_judge_targets_weigh_won_and_failed_steps_equally(tmp_path: Path, balance: bool) -> None:
    """4 steps: the won one weighs 4 / (2 * 1) = 2, each failed one 4 / (2 * 3) = 2/3 (unbalanced: 1 and 1)."""
    advantages = {}
    for k, flag in enumerate((False, balance)):
        driver = AgentLoopDriver(
            collector=UnevenRollouts(),  # type: ignore[arg-type]
            judge=JudgeCollector(object(), num_votes=3, votes=PatternVotes()),
            integrator=IntegratedIntegrator(), judge_targets=ConsistencyTargets(balance_outcomes=flag),
            pool=TaskPool.create(tmp_path / str(k), [TaskSpec("t0", "alfworld", "t0")]),
            to_env_task=lambda spec: spec, adaptation=None, tasks_per_iteration=1, seed=0, pad_id=0,
        )  # fmt: skip
        driver.save_initial_pool()
        data = source_iteration(driver, 0)
        assert data.judge is not None
        advantages[flag] = data.judge.advantages
    plain, chosen = advantages[False], advantages[balance]
    assert plain.shape == chosen.shape == (6,)  # the won step's 3 votes, then the second failed step's 3
    expected = torch.tensor([2.0] * 3 + [2 / 3] * 3) if balance else torch.ones(6)
    assert torch.allclose(chosen, plain * expected)
