import dataclasses

import pytest

from rlanything_core.envs.alfworld import AlfworldEnv
from rlanything_core.envs.protocols import AgentEnv, AgentObservation, EvaluationResult, SingleTurnTask, StepResult
from rlanything_core.envs.textworld_games import TextWorldEnv


def test_dataclasses_are_frozen_with_healthy_defaults():
    obs = AgentObservation(goal="g", observation="o", admissible_actions=("look",))
    res = StepResult(observation="o", admissible_actions=(), done=True, won=True)
    assert obs.failure_reason is None and res.failure_reason is None and res.truncated is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.won = False  # type: ignore[misc]


def test_env_classes_satisfy_the_agent_env_protocol():
    assert issubclass(AlfworldEnv, AgentEnv)
    assert issubclass(TextWorldEnv, AgentEnv)
    assert not issubclass(int, AgentEnv)


def test_single_turn_task_protocol_is_structural():
    @dataclasses.dataclass
    class Echo:
        task_id: str = "t0"
        prompt: str = "return 1"

        def evaluate(self, program: str) -> EvaluationResult:
            ok = program.strip() == "1"
            return EvaluationResult(verdicts=(ok,), pass_fraction=float(ok))

    task = Echo()
    assert isinstance(task, SingleTurnTask)
    assert task.evaluate("1").pass_fraction == 1.0
    assert task.evaluate("2").verdicts == (False,)
    assert not isinstance(object(), SingleTurnTask)
