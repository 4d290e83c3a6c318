"""OSWorld-format desktop tasks on this machine: Xvfb + LibreOffice, actions in a sandbox, OSWorld's evaluation.

GUI protocol (the shape this environment satisfies; the MiniWoB++ environment follows the same one):
``reset(task) -> observation``; ``step(action) -> (observation, done)``; ``evaluate() -> outcome`` (``.score`` in
``[0, 1]``); ``close()``. Actions are pyautogui code strings or computer_13 dicts, plus ``WAIT``/``DONE``/``FAIL``; an
episode ends at ``DONE``/``FAIL``, at ``max_steps`` (50, OSWorld's usual budget), or when the app or display fails
(the reason is kept in :attr:`LocalDesktopEnv.failure`). One display per environment object (one per worker); the
app restarts with every task; :meth:`close` leaves no Xvfb, LibreOffice or action worker running.

Trust boundaries (``docs/sandbox.md``, GUI threat model): the agent's actions run in the action sandbox, a fresh worker
per episode and a fresh child per action; every app runs in the episode's app sandbox (:mod:`.app_sandbox`) as an
unprivileged uid of the environment's own uid slot, seeing ``/usr``, the display, ``/home/user`` and a profile made
fresh at every reset; so does the window manager (:mod:`.window_manager`), and the X server runs as that uid. Every
reset starts a fresh X server (nothing an episode stored on the display reaches the next one) and hands the episode's
folders to the app uid before the agent's first action, never after. As root, the episode folder and the profile are
tmpfs mounts of their own (the sandboxes' mount tables name no host path). :meth:`evaluate` runs the task's postconfig
(its own key presses) in a new worker after releasing any key or button the agent left pressed, then stops every app and
worker, removes links and special files from the episode folder, and scores the files in a separate process with time,
memory and file-size limits (:mod:`.checker`); a check that breaks a limit scores 0 and is counted in
:attr:`LocalDesktopEnv.broken_limits`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop._mounts import mount_tmpfs, unmount
from rlanything_core.envs.desktop.action_sandbox import ActionSandbox
from rlanything_core.envs.desktop.actions import ActionKind, InvalidAction, parse_action
from rlanything_core.envs.desktop.app_sandbox import AppSandbox
from rlanything_core.envs.desktop.checker import Checker, CheckLimits
from rlanything_core.envs.desktop.config_steps import StepContext, postconfig_phases, run_step
from rlanything_core.envs.desktop.display import DisplayError, XDisplay
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import Outcome, run_steps, verdict_without_files
from rlanything_core.envs.desktop.office import OfficeApp
from rlanything_core.envs.desktop.task import DesktopTask, load_task
from rlanything_core.envs.desktop.terminal import TerminalKey, open_terminal, terminal_argv
from rlanything_core.envs.desktop.window_manager import start_window_manager, wait_window_manager
from rlanything_core.sandbox.slots import UidSlots

__all__ = [
    "DESKTOP_UID_BASE",
    "DESKTOP_UID_SLOTS",
    "EPISODE_TMPFS_BYTES",
    "PACKAGE_DIR",
    "RELEASE_INPUT",
    "DesktopObservation",
    "LocalDesktopEnv",
    "StepInfo",
]

DESKTOP_UID_BASE = 61000
"""First uid of the desktop environments' range (slot ``k``: ``base + 2k`` runs the apps, ``base + 2k + 1`` the
action worker); the coding sandbox's range starts at 62000. Nothing else may use the range."""
DESKTOP_UID_SLOTS = 64
"""Concurrent desktop environments on one machine (each holds one slot from its start to :meth:`close`)."""
EPISODE_TMPFS_BYTES = 2 << 30
"""Size of the episode folder's tmpfs (root only): what one episode's files may take, in memory."""

RELEASE_INPUT = (
    "pyautogui.PAUSE = 0\n"
    "for key in ('shift', 'shiftleft', 'shiftright', 'ctrl', 'ctrlleft', 'ctrlright', 'alt', 'altleft', "
    "'altright', 'win', 'winleft', 'winright'):\n    pyautogui.keyUp(key)\n"
    "for button in ('left', 'middle', 'right'):\n    pyautogui.mouseUp(button=button)\n"
)
"""What the evaluator runs before its own key presses: a modifier or button the agent left held would turn its
Ctrl+S into another command."""
PACKAGE_DIR = str(Path(__file__).resolve().parents[2])  # rlanything_core/ (this file: envs/desktop/env.py)
"""The library's folder (the shipped tasks' gold files live in it): hidden from the apps and the action worker."""


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
        require_bwrap: refuse to run actions without bubblewrap (the apps never run without it).
        check_limits: limits of the process that scores the result files (:class:`.CheckLimits`'s defaults).
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
        check_limits: CheckLimits | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self._own_dir = work_dir is None
        self.work_dir = Path(tempfile.mkdtemp(prefix="rla-desktop-") if work_dir is None else work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.max_steps = max_steps
        self.settle_s = settle_s
        self.screenshots = screenshots
        self.checker = Checker(check_limits)
        # one uid slot per environment, held until close(): the apps and the worker run as this env's own uids
        self._slot = contextlib.ExitStack()
        app_uid = worker_uid = None
        self._mounts: list[Path] = []
        if os.getuid() == 0:
            slot = self._slot.enter_context(UidSlots(DESKTOP_UID_BASE, DESKTOP_UID_SLOTS).acquire())
            app_uid, worker_uid = slot.program_uid, slot.harness_uid
        try:
            profile = self.work_dir / "profile"
            if os.getuid() == 0:
                for folder, size in ((self.work_dir / "episode", EPISODE_TMPFS_BYTES), (profile, 512 << 20)):
                    folder.mkdir(exist_ok=True)
                    mount_tmpfs(folder, size_bytes=size)
                    self._mounts.append(folder)
            self.display = XDisplay(width=width, height=height, uid=app_uid)
            self.fs = EpisodeFS(self.work_dir / "episode", owner=app_uid)
            self.apps = AppSandbox(
                self.display,
                home=self.fs.home,
                tmp_dir=self.fs.root / "tmp",  # the VM's /tmp, where OSWorld's loader puts /tmp/... files
                uid=app_uid,
                rw_binds=(OfficeApp.profile_bind(profile),),
                hidden_paths=(PACKAGE_DIR,),
            )
            self.office = OfficeApp(self.display, profile, self.apps)
            self.terminal_key = TerminalKey(self.display)  # Ctrl+Alt+T opens the sandboxed terminal
            self.sandbox = ActionSandbox(
                self.display,
                hidden_paths=(str(self.work_dir), PACKAGE_DIR),
                uid=worker_uid if worker_uid is not None else 65534,
                action_timeout_s=action_timeout_s,
                require_bwrap=require_bwrap,
            )
        except BaseException:
            if hasattr(self, "display"):
                self.display.close()
            self._unmount()
            self._slot.close()
            raise
        self.task: DesktopTask | None = None
        self.steps = 0
        self.done = True
        self.failure = ""
        self.last_action: str | None = None
        self.invalid_actions = 0
        self.action_errors = 0
        self.broken_limits: Counter[str] = Counter()  # checks that broke a limit, by limit
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
        self.sandbox.close()  # a fresh action worker per episode
        # the task's own folder and its file cache hold its expected files: neither the agent's code nor the apps
        # may read them
        self.sandbox.hidden_paths = (str(self.work_dir), PACKAGE_DIR, *self.task.private_paths)
        self.apps.hidden_paths = (PACKAGE_DIR, *self.task.private_paths)
        self.office.reset_profile()  # stops the apps (the window manager too); the next start has a fresh profile
        self.fs.reset()
        # a fresh X server: no atom, property, retained window or font path of the last episode, at any size
        self.display.restart()
        self.terminal_key.reconnect()
        self.apps.hand_over()
        self.steps, self.done, self.failure, self.last_action = 0, False, "", None
        self.invalid_actions = self.action_errors = 0
        ctx = self._context()
        wm = start_window_manager(self.apps)  # it starts while the set-up starts the apps
        for i, step in enumerate(self.task.config):
            try:
                run_step(step, ctx)
                if self.terminal_key.pressed():  # OSWorld's set-ups open the terminal with Ctrl+Alt+T
                    open_terminal(self.office)
            except Exception as exc:  # the episode is over, failed, with the reason
                self.done, self.failure = True, f"config[{i}] {step.get('type')}: {exc}"
                break
        if not self.done:
            try:
                wait_window_manager(self.display.name, wm)
            except DisplayError as exc:
                self.done, self.failure = True, f"window manager: {exc}"
        # the agent acts from here on: the folders are handed over now, and never walked again in this episode
        self.apps.seal()
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
                elif self.terminal_key.pressed():
                    try:
                        open_terminal(self.office)
                    except (DisplayError, RuntimeError) as exc:  # the agent sees no terminal; the episode goes on
                        info = StepInfo(action, error=f"Ctrl+Alt+T: {exc}")
                time.sleep(self.settle_s)
        if not self.display.alive:
            self.done, self.failure = True, f"display {self.display.name} died"
        if self.steps >= self.max_steps:
            self.done = True
        self.timings["step"].append(time.perf_counter() - t0)
        return self._observe(info), self.done

    def evaluate(self) -> Outcome:
        """Score the episode with the task's evaluator (see :mod:`.evaluator`); a failed episode scores 0.

        The episode is over afterwards: the apps and the action worker are stopped (the module docstring says
        in which order and why). The agent's terminals are stopped before the postconfig; its file steps (exports,
        downloads, commands) run only after every app stopped and the links are removed; settings checks read the
        app's real profile (``docs/sandbox.md``, "Postconfig and checks").
        """
        if self.task is None:
            raise RuntimeError("evaluate() before reset(task)")
        if self.failure:
            return Outcome(0.0, error=self.failure)
        t0 = time.perf_counter()
        self.done = True
        outcome = verdict_without_files(self.task, self.last_action)
        if outcome is None:
            # the agent's worker goes: the evaluator's key presses run in a fresh one, from a released keyboard
            self.sandbox.close()
            # so do the agent's shells (each terminal is a sandbox of its own, with all it started): a loop left in
            # one would race the evaluator's steps (rewrite a file the postconfig downloads and opens, or a result
            # right after its Ctrl+S); the documents the steps save stay open
            self.apps.stop(terminal_argv())
            released = self.sandbox.execute_code(RELEASE_INPUT)
            # the desktop steps (focus, Ctrl+S) need the apps; exports, downloads and commands wait until no agent
            # process is left to race them and no link is left for them to follow (config_steps.postconfig_phases)
            live, after = postconfig_phases(list(self.task.evaluator.get("postconfig", []) or []))
            postconfig_error = run_steps(live, self._context())
            if not released.ok:
                postconfig_error = "; ".join(e for e in (f"releasing keys: {released.error}", postconfig_error) if e)
            self.sandbox.close()
            self.office.close(clear_tmp=False)  # a result may lie in the VM's /tmp; reset and close remove it
            self.fs.drop_links()
            if not postconfig_error:
                postconfig_error = run_steps(after, self._context())
            screen = (self.display.width, self.display.height)
            checked = self.checker.check(
                self.task, self.fs, screen=screen, postconfig_error=postconfig_error,
                profile_dir=self.office.profile_dir,  # the app's real settings, written before it stopped
            )
            if checked.limit is not None:
                self.broken_limits[checked.limit.value] += 1
            outcome = checked.outcome
        self.timings["evaluate"].append(time.perf_counter() - t0)
        return outcome

    def close(self) -> None:
        """Stop the action worker, the apps and Xvfb; remove the private work folder; free the uid slot."""
        try:
            self.checker.close()
            self.sandbox.close()
            self.office.close()
            self.terminal_key.close()
            self.display.close()
            self._unmount()
            if self._own_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)
        finally:
            self._slot.close()

    def _unmount(self) -> None:
        while self._mounts:
            unmount(self._mounts.pop())

    def __enter__(self) -> LocalDesktopEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
