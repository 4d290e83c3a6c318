"""Small protocols every environment adapter implements: multi-turn text agents and single-turn tasks.

A multi-turn environment object plays one episode of one game: ``reset()`` gives the goal, the first observation and
the admissible actions; ``step(action)`` gives the next observation. A single-turn task (coding) is a prompt plus an
``evaluate(program)`` that runs the task's tests. Collectors are written against these protocols only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["AgentEnv", "AgentObservation", "EvaluationResult", "SingleTurnTask", "StepResult"]


@dataclass(frozen=True)
class AgentObservation:
    """What the agent sees at the start of an episode.

    Attributes:
        goal: the task in words (ALFWorld: the text after "Your task is to: ").
        observation: the full first observation text (it contains the goal).
        admissible_actions: the commands the engine accepts in this state (the agent may still send others).
        failure_reason: ``None`` for a healthy episode; set by :mod:`rlanything_core.envs.parallel` when the worker
            hosting the episode crashed (``"worker_crash"``), hung (``"worker_timeout"``) or the engine raised
            (``"env_error: ..."``); such an episode is over and counts as failed.
    """

    goal: str
    observation: str
    admissible_actions: tuple[str, ...]
    failure_reason: str | None = None


@dataclass(frozen=True)
class StepResult:
    """The engine's answer to one action.

    Attributes:
        observation: the text the engine printed.
        admissible_actions: the commands accepted in the new state (empty once the episode is done).
        done: the episode is over (won, step limit reached, or failed).
        won: the goal holds.
        truncated: the episode ended because it reached the environment's step limit without winning.
        failure_reason: see :class:`AgentObservation`; ``None`` when the engine answered normally.
    """

    observation: str
    admissible_actions: tuple[str, ...]
    done: bool
    won: bool
    truncated: bool = False
    failure_reason: str | None = None


@runtime_checkable
class AgentEnv(Protocol):
    """One episode of a multi-turn text game (ALFWorld, TextWorld)."""

    def reset(self) -> AgentObservation:
        """Start (or restart) the episode from the game's initial state."""
        ...

    def step(self, action: str) -> StepResult:
        """Apply one text command; an inadmissible command is data (the engine says "Nothing happens.")."""
        ...

    def close(self) -> None:
        """Release engine resources."""
        ...


@dataclass(frozen=True)
class EvaluationResult:
    """A minimal result type satisfying the ``evaluate`` contract (implementations may return richer ones).

    Attributes:
        verdicts: one verdict per test (implementation-defined Enum members or strings).
        pass_fraction: fraction of tests passed, in ``[0, 1]``.
    """

    verdicts: tuple[Any, ...] = field(default_factory=tuple)
    pass_fraction: float = 0.0


@runtime_checkable
class SingleTurnTask(Protocol):
    """A single-turn task: one prompt, one answer (a program), judged by running tests.

    Attributes:
        task_id: a stable identifier of the task.
        prompt: the text shown to the policy.
    """

    task_id: str
    prompt: str

    def evaluate(self, program: str) -> Any:
        """Run the task's tests on ``program``; the result has ``.verdicts`` and ``.pass_fraction``."""
        ...
