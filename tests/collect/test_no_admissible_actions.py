"""An episode whose state offers no admissible command ends, failed, with a reason (never a crash mid-run)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rlanything_core.collect.action_selection import Selection
from rlanything_core.collect.agent import AgentCollector, SequentialRunner
from rlanything_core.envs.protocols import AgentObservation, StepResult


class DeadEndEnv:
    """A two-state game: after the first command the engine offers nothing (a broken or rewritten game can)."""

    def reset(self) -> AgentObservation:
        return AgentObservation("reach the end", "You are here.", ("go north",))

    def step(self, action: str) -> StepResult:
        return StepResult("A wall.", (), False, False)

    def close(self) -> None:
        pass


class FirstCommand:
    boxed_answer = False

    def select(self, backend: Any, prompts: Sequence[Any], actions: Sequence[Sequence[str]], *,
               seeds: Sequence[int]) -> list[Selection]:
        return [Selection([], [], [], a[0], a[0]) for a in actions]


def test_an_empty_admissible_list_ends_the_episode_as_failed_with_a_reason() -> None:
    collector = AgentCollector(None, SequentialRunner(lambda task: DeadEndEnv()), FirstCommand(), group_size=2,
                               max_steps=5)
    episodes, stats = collector.collect(["game"], seed=0)
    assert [len(e.steps) for e in episodes] == [1, 1]
    assert all(not e.won and e.failure_reason == "no_admissible_actions" for e in episodes)
    assert stats.failure_reasons == {"no_admissible_actions": 2}


def test_a_named_collection_announces_its_resets(capsys: pytest.CaptureFixture[str]) -> None:
    # resetting a whole split's engines takes minutes before the first step: it has its own lines
    collector = AgentCollector(None, SequentialRunner(lambda task: DeadEndEnv()), FirstCommand(), group_size=2,
                               max_steps=5, progress="evaluation")  # fmt: skip
    collector.collect(["game"], seed=0)
    lines = [x.split("] ", 1)[1] for x in capsys.readouterr().out.splitlines()]
    assert lines[0] == "evaluation (2 episodes): resetting the environments: started"
    assert lines[1].startswith("evaluation (2 episodes): resetting the environments: done in ")
    assert lines[2].startswith("evaluation (2 episodes): 0/5 steps")
