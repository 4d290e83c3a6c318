"""A GUI episode as a multi-turn ``AgentEnv``: collectors, the judge and the loop need nothing GUI-specific.

``GuiEpisode(env, task)`` plays one episode of ``task`` in a :class:`~rlanything_core.envs.protocols.GuiEnv`:

- ``reset()`` gives the instruction as the goal, the DOM text as the observation, the DOM-derived candidates as the
  admissible actions, and keeps the screenshot (``GuiAgentObservation.screenshot``) for vision-language policies;
- ``step(action)`` applies the action; the episode ends when the page's checker fires, when the agent sends
  ``DONE`` / ``FAIL``, or at the step limit, and then ``verify()`` (the task's checker) decides ``won``.

The step results are plain ``StepResult`` subclasses, so they travel through :class:`~rlanything_core.envs.parallel.
EnvPool` like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlanything_core.envs.protocols import AgentObservation, GuiEnv, GuiObservation, StepResult

__all__ = ["GuiAgentObservation", "GuiEpisode", "GuiStepResult"]


@dataclass(frozen=True)
class GuiAgentObservation(AgentObservation):
    """``AgentObservation`` plus the screenshot (``(H, W, 3)`` ``uint8`` or ``None``)."""

    screenshot: Any = None


@dataclass(frozen=True)
class GuiStepResult(StepResult):
    """``StepResult`` plus the screenshot, the checker's raw reward and whether the action was invalid.

    Attributes:
        screenshot: the page after the action (``None`` once done or when switched off).
        reward: the checker's raw reward once ``done`` (``0.0`` before).
        invalid_action: why the action could not be applied, else ``None``.
        outcome_reason: the checker's explanation once ``done``.
    """

    screenshot: Any = None
    reward: float = 0.0
    invalid_action: str | None = None
    outcome_reason: str = ""


class GuiEpisode:
    """One episode of ``task`` in ``env``, behind the ``AgentEnv`` protocol.

    Args:
        env: the GUI environment (its ``max_steps`` is the episode's step limit).
        task: what ``env.reset`` takes.
        close_env: close ``env`` when the episode is closed (``False`` when the caller owns it).
    """

    def __init__(self, env: GuiEnv, task: Any, *, close_env: bool = True) -> None:
        self.env = env
        self.task = task
        self.close_env = close_env
        self.steps = 0
        self.invalid_actions = 0

    @staticmethod
    def _text(obs: GuiObservation) -> str:
        note = f"(last action invalid: {obs.invalid_action})\n" if obs.invalid_action else ""
        return note + obs.dom_text

    def reset(self) -> GuiAgentObservation:
        """Start the episode."""
        self.steps = 0
        self.invalid_actions = 0
        obs = self.env.reset(self.task)
        return GuiAgentObservation(obs.instruction, self._text(obs), obs.candidates, screenshot=obs.screenshot)

    def step(self, action: str) -> GuiStepResult:
        """Apply ``action``; at the end (page done, ``DONE``/``FAIL``, or the step limit) the checker decides."""
        result = self.env.step(action)
        self.steps += 1
        obs = result.observation
        self.invalid_actions += int(obs.invalid_action is not None)
        truncated = not result.done and self.steps >= self.env.max_steps
        if not (result.done or truncated):
            return GuiStepResult(
                self._text(obs), obs.candidates, done=False, won=False, screenshot=obs.screenshot,
                invalid_action=obs.invalid_action,
            )  # fmt: skip
        outcome = self.env.verify()
        return GuiStepResult(
            self._text(obs), (), done=True, won=outcome.won, truncated=truncated and not outcome.won,
            screenshot=obs.screenshot, reward=outcome.reward, invalid_action=obs.invalid_action,
            outcome_reason=outcome.reason,
        )  # fmt: skip

    def close(self) -> None:
        """Close the environment (when this episode owns it)."""
        if self.close_env:
            self.env.close()
