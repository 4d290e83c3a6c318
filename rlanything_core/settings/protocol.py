"""What an agent setting gives the loop (:class:`AgentTasks`), and the error its checks raise (:class:`SettingError`).

The loop (arXiv 2602.02488, Sec. 3) needs, of a setting: the task pool's root tasks, the evaluation splits, an
environment factory for a step limit, how a pool task becomes what an environment is built from, and, where there is
one, a step oracle labelling each action (the judge's process accuracy). The wiring
(``rlanything_core/assembly/agent.py``) puts the factories in worker processes and reads the step limits; the setting
holds only its own values.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, ClassVar, Protocol, runtime_checkable

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.loop.evaluation import EvalSplit

__all__ = ["AgentTasks", "Runner", "SettingError", "StepOracle"]

StepOracle = Callable[[Any, list[str]], list[int]]
"""``oracle(environment task, actions) -> [+1 progress / -1 otherwise]`` per action."""


class Runner(Enum):
    """How the wiring plays a setting's environments (``rlanything_core/assembly/agent.py``)."""

    WORKERS = "workers"
    """``setting.env_workers`` worker processes (1: in this process), one pool per step limit."""
    BROWSERS = "browsers"
    """Worker processes owning browsers: one pool for training and evaluation, at the larger step limit (each
    collector stops its episodes at its own)."""
    IN_PROCESS = "in_process"
    """In this process, an episode at a time (``setting.env_workers`` must be 1): the environments share what the
    setting holds (the desktop's displays)."""


class SettingError(ValueError):
    """A setting's value that cannot work: names the parameter, the problem and the fix.

    Attributes:
        param: the setting's parameter (a field of its dataclass) or the environment variable at fault.
        problem: what is wrong.
        fix: what to do.
    """

    def __init__(self, param: str, problem: str, fix: str) -> None:
        super().__init__(f"{param}: {problem}. Fix: {fix}")
        self.param = param
        self.problem = problem
        self.fix = fix


@runtime_checkable
class AgentTasks(Protocol):
    """The parts of an agent setting (ALFWorld, TextWorld, MiniWoB++, desktop), read by the agent loop.

    Built from plain values (paths, sizes, seeds); :attr:`runner` says how its environments run.
    """

    runner: ClassVar[Runner]

    def check(self) -> None:
        """Refuse values that cannot work (missing data, empty splits) before any work.

        Raises:
            SettingError: naming the parameter and the fix.
        """

    def roots(self) -> list[TaskSpec]:
        """The task pool's root tasks."""

    def splits(self) -> list[EvalSplit]:
        """The evaluation splits (their tasks are what :meth:`env_factory`'s environments are built from)."""

    def env_factory(self, max_steps: int) -> Any:
        """A picklable ``task -> AgentEnv`` factory whose episodes stop after ``max_steps`` actions."""

    def to_env_task(self, task: TaskSpec) -> Any:
        """What an environment is built from, for a pool task (a root or a rewritten one)."""

    def step_oracle(self) -> StepOracle | None:
        """The setting's step labels, or ``None`` where it has none."""
