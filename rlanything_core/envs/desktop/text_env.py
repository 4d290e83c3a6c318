"""Desktop tasks behind the text-agent protocol (:class:`~rlanything_core.envs.protocols.AgentEnv`) for the loop.

Each turn the agent reads the cell grid (:mod:`.text_view`, saved by Ctrl+S and read back with openpyxl) and picks
one of the candidate actions; the candidate's GUI actions run in the real application through the action sandbox.
The episode ends at ``DONE``/``FAIL`` or at ``max_episode_steps``, and is won when the task's OSWorld evaluator
scores 1.0 (the evaluation runs once, at the end). Displays are costly (an Xvfb and a LibreOffice each): a
:class:`DisplayPool` hands them out and takes them back, so a run starts at most as many as episodes run at once.
"""

from __future__ import annotations

import atexit
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlanything_core.envs.desktop.env import LocalDesktopEnv
from rlanything_core.envs.desktop.task import DesktopTask
from rlanything_core.envs.desktop.text_view import TextAction, candidate_actions, read_grid, render_grid
from rlanything_core.envs.protocols import AgentObservation, StepResult

__all__ = ["DesktopTextEnv", "DesktopTextEnvFactory", "DisplayPool", "document_path"]

_SAVE = "pyautogui.hotkey('ctrl', 's')"


class DisplayPool:
    """Idle :class:`LocalDesktopEnv` instances, reused across episodes; :meth:`close` stops them all.

    Args:
        settle_s: passed to every environment (pause after each GUI action).
    """

    def __init__(self, *, settle_s: float = 0.15) -> None:
        self.settle_s = settle_s
        self._idle: list[LocalDesktopEnv] = []
        self._all: list[LocalDesktopEnv] = []
        atexit.register(self.close)

    def acquire(self) -> LocalDesktopEnv:
        """An idle environment, or a new one."""
        if self._idle:
            return self._idle.pop()
        env = LocalDesktopEnv(screenshots=False, settle_s=self.settle_s, max_steps=10_000)
        self._all.append(env)
        return env

    def release(self, env: LocalDesktopEnv) -> None:
        """Give ``env`` back (its app keeps running until its next reset)."""
        if env in self._all and env not in self._idle:
            self._idle.append(env)

    @property
    def size(self) -> int:
        """Environments started so far."""
        return len(self._all)

    def close(self) -> None:
        """Stop every environment of the pool."""
        for env in self._all:
            env.close()
        self._all.clear()
        self._idle.clear()


def document_path(task: DesktopTask) -> str:
    """The VM path of the spreadsheet the task opens (its last ``open`` step)."""
    paths = [s["parameters"]["path"] for s in task.config if s.get("type") == "open"]
    if not paths:
        raise ValueError(f"task {task.task_id} opens no spreadsheet: the text view needs one")
    return str(paths[-1])


@dataclass
class DesktopTextEnv:
    """One episode of ``task`` as a text game (see the module docstring)."""

    task: DesktopTask
    pool: DisplayPool
    max_episode_steps: int = 10
    _env: LocalDesktopEnv | None = field(default=None, repr=False)
    _candidates: dict[str, TextAction] = field(default_factory=dict, repr=False)
    _steps: int = 0
    score: float | None = None
    save_timeout_s: float = 5.0

    def _view(self, *, save: bool) -> tuple[str, tuple[str, ...]]:
        """Save (after an action), read the grid back, derive the candidates.

        LibreOffice writes the file to a temporary name and renames it, so a changed modification time means the
        whole new file is there; an action that changed nothing leaves the time as it was (waited for up to
        ``save_timeout_s``).
        """
        assert self._env is not None
        path = self._env.fs.local(document_path(self.task))
        if save:
            before = path.stat().st_mtime_ns if path.exists() else 0
            self._env.sandbox.execute_code(_SAVE)
            deadline = time.monotonic() + self.save_timeout_s
            while time.monotonic() < deadline and (not path.exists() or path.stat().st_mtime_ns == before):
                time.sleep(0.05)
        grid = read_grid(path)
        self._candidates = {a.label: a for a in candidate_actions(grid, self.task.instruction)}
        return render_grid(grid), tuple(self._candidates)

    def reset(self) -> AgentObservation:
        """Start the task in a pooled display; the first observation is the grid."""
        if self._env is None:
            self._env = self.pool.acquire()
        self._env.reset(self.task)
        self._steps, self.score = 0, None
        if self._env.failure:
            return AgentObservation(self.task.instruction, self._env.failure, (), failure_reason=self._env.failure)
        text, actions = self._view(save=False)
        return AgentObservation(self.task.instruction, f"{self.task.instruction}\n\n{text}", actions)

    def _finish(self, observation: str, *, truncated: bool) -> StepResult:
        assert self._env is not None
        outcome = self._env.evaluate()
        self.score = outcome.score
        won = outcome.score == 1.0
        note = f"{observation}\nTask {'completed' if won else 'not completed'}."
        failure = self._env.failure or None
        return StepResult(note, (), True, won, truncated=truncated and not won, failure_reason=failure)

    def step(self, action: str) -> StepResult:
        """Run the candidate named ``action`` (an unknown one is a wasted turn)."""
        if self._env is None or self.score is not None:
            raise RuntimeError("step() before reset() or after the episode ended")
        self._steps += 1
        chosen = self._candidates.get(action)
        if chosen is None:
            observation = f"Unknown action {action!r}: nothing happened."
        else:
            for gui in chosen.gui_actions:
                self._env.step(gui)
                if self._env.done:
                    break
            observation = f"Did: {action}."
        if self._env.done:
            return self._finish(observation, truncated=False)
        if self._steps >= self.max_episode_steps:
            return self._finish(observation, truncated=True)
        text, actions = self._view(save=chosen is not None)
        return StepResult(f"{observation}\n\n{text}", actions, False, False)

    def close(self) -> None:
        """Give the display back to the pool."""
        if self._env is not None:
            self.pool.release(self._env)
            self._env = None


@dataclass
class DesktopTextEnvFactory:
    """``task -> DesktopTextEnv`` for the collectors (``SequentialRunner``); every env draws on ``pool``."""

    pool: DisplayPool
    max_episode_steps: int = 10

    def __call__(self, task: DesktopTask | str | Path) -> DesktopTextEnv:
        """Build the env of one task (a :class:`DesktopTask` or the path of its JSON)."""
        from rlanything_core.envs.desktop.task import load_task

        resolved = task if isinstance(task, DesktopTask) else load_task(task)
        return DesktopTextEnv(resolved, self.pool, max_episode_steps=self.max_episode_steps)
