"""OSWorld-format desktop tasks on this machine: Xvfb + LibreOffice, actions in a sandbox, OSWorld's evaluation.

GUI protocol (the shape this environment satisfies; the MiniWoB++ environment follows the same one):
``reset(task) -> observation``; ``step(action) -> (observation, done)``; ``evaluate() -> outcome`` (``.score`` in
``[0, 1]``); ``close()``. Actions are pyautogui code strings or computer_13 dicts, plus ``WAIT``/``DONE``/``FAIL``; an
episode ends at ``DONE``/``FAIL``, at ``max_steps`` (50, OSWorld's usual budget), or when the app or display fails
(the reason is kept in :attr:`LocalDesktopEnv.failure`). One display per environment object (one per worker); the
app restarts with every task; :meth:`close` leaves no Xvfb, LibreOffice or action worker running.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.action_sandbox import ActionSandbox
from rlanything_core.envs.desktop.actions import ActionKind, InvalidAction, parse_action
from rlanything_core.envs.desktop.config_steps import StepContext, run_step
from rlanything_core.envs.desktop.display import XDisplay
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import Outcome, evaluate_task
from rlanything_core.envs.desktop.office import OfficeApp
from rlanything_core.envs.desktop.task import DesktopTask, load_task

__all__ = ["DesktopObservation", "LocalDesktopEnv", "StepInfo"]


@dataclass(frozen=True)
class StepInfo:
    """What happened to the last action: ``invalid`` (rejected before running), ``error`` (its own failure)."""

    action: Any = None
    invalid: bool = False
    error: str = ""


@dataclass(frozen=True)
class DesktopObservation:
    """What the agent sees.

    Attributes:
        instruction: the task.
        screenshot: the screen (``PIL.Image``, ``height x width`` RGB) or ``None`` when screenshots are off.
        step: actions taken so far.
        info: the last action's fate.
    """

    instruction: str
    screenshot: Any
    step: int
    info: StepInfo = field(default_factory=StepInfo)


class LocalDesktopEnv:
    """OSWorld-format tasks in real LibreOffice on a private Xvfb display.

    Args:
        work_dir: where episode folders and the LibreOffice profile live (a private temporary folder by default,
            removed by :meth:`close`).
        width: screen width, pixels.
        height: screen height, pixels.
        max_steps: the step limit.
        settle_s: pause after each action before the screenshot (the app redraws).
        action_timeout_s: limit of one action in the sandbox.
        screenshots: take a screenshot for every observation.
        require_bwrap: refuse to run actions without bubblewrap.
    """

    def __init__(
        self,
        *,
        work_dir: str | Path | None = None,
        width: int = 1280,
        height: int = 800,
        max_steps: int = 50,
        settle_s: float = 0.3,
        action_timeout_s: float = 30.0,
        screenshots: bool = True,
        require_bwrap: bool = False,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self._own_dir = work_dir is None
        self.work_dir = Path(tempfile.mkdtemp(prefix="rla-desktop-") if work_dir is None else work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.max_steps = max_steps
        self.settle_s = settle_s
        self.screenshots = screenshots
        self.display = XDisplay(width=width, height=height)
        self.office = OfficeApp(self.display, self.work_dir / "profile")
        self.fs = EpisodeFS(self.work_dir / "episode")
        self.sandbox = ActionSandbox(
            self.display,
            hidden_paths=(str(self.work_dir),),
            action_timeout_s=action_timeout_s,
            require_bwrap=require_bwrap,
        )
        self.task: DesktopTask | None = None
        self.steps = 0
        self.done = True
        self.failure = ""
        self.last_action: str | None = None
        self.invalid_actions = 0
        self.action_errors = 0
        self.timings: dict[str, list[float]] = {"reset": [], "step": [], "screenshot": [], "evaluate": []}

    def _context(self) -> StepContext:
        assert self.task is not None
        return StepContext(
            self.fs,
            self.office,
            self.sandbox,
            self.task.task_dir,
            (self.display.width, self.display.height),
            self.task.files,
        )

    def _observe(self, info: StepInfo | None = None) -> DesktopObservation:
        shot = None
        if self.screenshots and self.display.alive:
            t0 = time.perf_counter()
            shot = self.display.screenshot()
            self.timings["screenshot"].append(time.perf_counter() - t0)
        assert self.task is not None
        return DesktopObservation(self.task.instruction, shot, self.steps, info or StepInfo())

    def reset(self, task: DesktopTask | str | Path) -> DesktopObservation:
        """Start ``task`` (a task or the path of its JSON): fresh app, fresh files, the task's set-up steps.

        Raises:
            UnsupportedTaskError: the task is outside the local subset (see :mod:`.task`).
        """
        t0 = time.perf_counter()
        self.task = task if isinstance(task, DesktopTask) else load_task(task)
        self.sandbox.close()
        # the task's own folder and its file cache hold its expected files: the agent's code must not read them
        self.sandbox.hidden_paths = (str(self.work_dir), *self.task.private_paths)
        self.office.close()
        self.fs.reset()
        self.steps, self.done, self.failure, self.last_action = 0, False, "", None
        self.invalid_actions = self.action_errors = 0
        ctx = self._context()
        for i, step in enumerate(self.task.config):
            try:
                run_step(step, ctx)
            except Exception as exc:  # the episode is over, failed, with the reason
                self.done, self.failure = True, f"config[{i}] {step.get('type')}: {exc}"
                break
        self.timings["reset"].append(time.perf_counter() - t0)
        return self._observe()

    def step(self, action: Any) -> tuple[DesktopObservation, bool]:
        """Apply one action; returns ``(observation, done)``. Invalid actions are counted, not raised."""
        if self.task is None or self.done:
            raise RuntimeError("step() after the episode ended; call reset(task)")
        t0 = time.perf_counter()
        self.steps += 1
        info = StepInfo(action)
        try:
            parsed = parse_action(action)
        except InvalidAction as exc:
            self.invalid_actions += 1
            info = StepInfo(action, invalid=True, error=str(exc))
        else:
            if parsed.kind in (ActionKind.DONE, ActionKind.FAIL):
                self.last_action, self.done = parsed.kind.value, True
            elif parsed.kind is ActionKind.WAIT:
                self.last_action = "WAIT"
                time.sleep(self.settle_s)
            else:
                self.last_action = None
                result = self.sandbox.execute(parsed)
                if not result.ok:
                    self.action_errors += 1
                    info = StepInfo(action, error=result.error)
                time.sleep(self.settle_s)
        if not self.display.alive:
            self.done, self.failure = True, f"display {self.display.name} died"
        if self.steps >= self.max_steps:
            self.done = True
        self.timings["step"].append(time.perf_counter() - t0)
        return self._observe(info), self.done

    def evaluate(self) -> Outcome:
        """Score the episode with the task's evaluator (see :mod:`.evaluator`); a failed episode scores 0."""
        if self.task is None:
            raise RuntimeError("evaluate() before reset(task)")
        if self.failure:
            return Outcome(0.0, error=self.failure)
        t0 = time.perf_counter()
        try:
            outcome = evaluate_task(self.task, self._context(), last_action=self.last_action)
        except Exception as exc:  # a broken metric input is a failed episode, with its reason
            outcome = Outcome(0.0, error=f"evaluation failed: {type(exc).__name__}: {exc}")
        self.timings["evaluate"].append(time.perf_counter() - t0)
        return outcome

    def close(self) -> None:
        """Stop the action worker, LibreOffice and Xvfb; remove the private work folder."""
        self.sandbox.close()
        self.office.close()
        self.display.close()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> LocalDesktopEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
