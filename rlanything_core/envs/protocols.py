"""Small protocols every environment adapter implements: multi-turn text agents and single-turn tasks.

A multi-turn environment object plays one episode of one game: ``reset()`` gives the goal, the first observation and
the admissible actions; ``step(action)`` gives the next observation. A single-turn task (coding) is a prompt plus an
``evaluate(program)`` that runs the task's tests. A GUI environment (``GuiEnv``: MiniWoB++ pages in a real browser)
is reset with a task, stepped with action strings until it is done or the agent says ``DONE``/``FAIL``, and its own
checker gives the outcome (``verify``); :class:`rlanything_core.envs.gui.GuiEpisode` turns it into an ``AgentEnv``.
Collectors are written against these protocols only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "GUI_MAX_STEPS",
    "AgentEnv",
    "AgentObservation",
    "EvaluationResult",
    "GuiEnv",
    "GuiObservation",
    "GuiOutcome",
    "GuiStep",
    "GuiTerminal",
    "SingleTurnTask",
    "StepResult",
    "check_step",
]

GUI_MAX_STEPS = 50
"""The step limit of a GUI episode (the paper's OSWorld setting)."""


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


def check_step(action: object, *, episode_over: bool) -> None:
    """The preconditions of :meth:`AgentEnv.step` for an engine-backed text game: a ``str`` action, a live episode.

    Raises:
        ValueError: ``action`` is not a ``str``, or ``episode_over`` (call ``reset()`` first).

    Examples:
        >>> check_step("look", episode_over=False)
        >>> check_step(3, episode_over=False)
        Traceback (most recent call last):
        ...
        ValueError: action must be a str, got int
    """
    if not isinstance(action, str):
        raise ValueError(f"action must be a str, got {type(action).__name__}")
    if episode_over:
        raise ValueError("the episode is over (or was never reset); call reset() first")


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


class GuiTerminal(str, Enum):
    """The actions that end a GUI episode from the agent's side (the paper's ``DONE`` / ``FAIL``)."""

    DONE = "DONE"
    """The agent believes the task is complete: the task's checker decides."""
    FAIL = "FAIL"
    """The agent gives up: the episode fails whatever the page says."""


@dataclass(frozen=True)
class GuiObservation:
    """What a GUI agent sees at one step.

    Attributes:
        instruction: the task in words (the page's utterance, plus any hints of the task's current version).
        dom_text: a compact text rendering of the page's elements, one ``[ref] tag "text"`` line each.
        candidates: action strings derived from the page (click / type / press / ``DONE``), for a scoring policy;
            a generative policy may write any action string.
        screenshot: the rendered page as a ``(H, W, 3)`` ``uint8`` array (for vision-language policies and judges),
            or ``None`` when screenshots are switched off.
        fields: the task's key-value fields parsed from the instruction (``(("username", "keneth"), ...)``).
        invalid_action: why the last action could not be applied (unparseable, an element that is gone), else
            ``None``; an invalid action is counted and the episode goes on.
    """

    instruction: str
    dom_text: str
    candidates: tuple[str, ...]
    screenshot: Any = None
    fields: tuple[tuple[str, str], ...] = ()
    invalid_action: str | None = None


@dataclass(frozen=True)
class GuiStep:
    """The environment's answer to one GUI action.

    Attributes:
        observation: the page after the action (its candidates are empty once ``done``).
        done: the page ended the episode (its checker fired) or the agent sent ``DONE`` / ``FAIL``.
    """

    observation: GuiObservation
    done: bool


@dataclass(frozen=True)
class GuiOutcome:
    """The final verification of a GUI episode, by the task's own checker (never by a model).

    Attributes:
        reward: the checker's raw reward in ``[-1, 1]`` (not discounted by time); ``0`` when it never fired.
        won: ``reward > 0``.
        reason: the checker's explanation, or why there is no verdict (``"not finished"``, ``"agent gave up"``).
    """

    reward: float
    won: bool
    reason: str = ""


@runtime_checkable
class GuiEnv(Protocol):
    """A GUI environment: one episode at a time in a real application (a browser page).

    Attributes:
        max_steps: the step limit of an episode (:data:`GUI_MAX_STEPS` by default).
    """

    max_steps: int

    def reset(self, task: Any) -> GuiObservation:
        """Start an episode of ``task`` (a task spec; the same spec and seed give the same page)."""
        ...

    def step(self, action: str) -> GuiStep:
        """Apply one action string; an invalid one is data (``invalid_action``), the episode goes on."""
        ...

    def verify(self) -> GuiOutcome:
        """The outcome of the episode so far, from the task's checker."""
        ...

    def close(self) -> None:
        """Release the application (or hand it back to the process's cache)."""
        ...
