"""OSWorld's own environment (``desktop-env``, real VMs) behind the same GUI protocol as :class:`LocalDesktopEnv`.

``pip install desktop-env`` (the ``osworld`` extra; it resolves ~260 packages including a CUDA torch, so it is never
a CI dependency) and a provider OSWorld supports: ``vmware``, ``virtualbox``, ``docker`` (KVM), or a cloud (``aws``,
``azure``, ``gcp``, ``aliyun``, ``volcengine``). The package is imported only when an adapter is built. Tasks are
OSWorld JSONs (a path, a dict, or a :class:`DesktopTask`), handed to ``DesktopEnv.reset(task_config=...)`` as they
are, so every task of OSWorld runs, not only the local subset; ``evaluate()`` is OSWorld's own score.

The files ``DesktopEnv`` downloads land in ``cache_dir`` in OSWorld's layout (``<cache_dir>/<task id>/...``), the
layout the local environment reads (:mod:`.osworld_cache`): a cache filled here, on a machine with a network, serves
the same tasks on :class:`~.env.LocalDesktopEnv` (``load_task(path, cache_dir=...)``, ``setting.cache_dir``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.actions import ActionKind, InvalidAction, parse_action
from rlanything_core.envs.desktop.env import DesktopObservation, StepInfo
from rlanything_core.envs.desktop.evaluator import Outcome
from rlanything_core.envs.desktop.task import DesktopTask

__all__ = ["PROVIDERS", "OSWorldConfig", "OSWorldEnv", "OSWorldUnavailable", "osworld_kwargs"]

PROVIDERS = ("vmware", "virtualbox", "docker", "aws", "azure", "gcp", "aliyun", "volcengine")
ACTION_SPACES = ("pyautogui", "computer_13")


class OSWorldUnavailable(ImportError):
    """``desktop-env`` is not installed (or fails to import)."""


@dataclass(frozen=True)
class OSWorldConfig:
    """Arguments of OSWorld's ``DesktopEnv`` (their names and defaults, checked here).

    Attributes:
        provider: the VM provider (one of :data:`PROVIDERS`).
        path_to_vm: the VM image (``.vmx`` / VirtualBox name); ``None`` lets OSWorld fetch or pick one.
        region: cloud region (cloud providers only).
        snapshot_name: the snapshot every reset reverts to.
        action_space: ``"pyautogui"`` or ``"computer_13"``.
        screen_size: ``(width, height)``.
        headless: no VM window.
        require_a11y_tree: also return the accessibility tree in observations (slow).
        os_type: ``"Ubuntu"`` or ``"Windows"``.
        cache_dir: where OSWorld caches task files.
        max_steps: the step limit (50, as in OSWorld's runs).
        pause_s: OSWorld's pause after each action.
    """

    provider: str = "vmware"
    path_to_vm: str | None = None
    region: str | None = None
    snapshot_name: str = "init_state"
    action_space: str = "pyautogui"
    screen_size: tuple[int, int] = (1920, 1080)
    headless: bool = True
    require_a11y_tree: bool = False
    os_type: str = "Ubuntu"
    cache_dir: str = "cache"
    max_steps: int = 50
    pause_s: float = 2.0

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"provider: expected one of {PROVIDERS}, got {self.provider!r}")
        if self.action_space not in ACTION_SPACES:
            raise ValueError(f"action_space: expected one of {ACTION_SPACES}, got {self.action_space!r}")
        if self.os_type not in ("Ubuntu", "Windows"):
            raise ValueError(f"os_type: expected 'Ubuntu' or 'Windows', got {self.os_type!r}")
        if len(self.screen_size) != 2 or min(self.screen_size) < 64:
            raise ValueError(f"screen_size: expected (width, height) >= 64, got {self.screen_size!r}")
        if self.region is not None and self.provider in ("vmware", "virtualbox", "docker"):
            raise ValueError(f"region applies to cloud providers only, not {self.provider!r}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")


def osworld_kwargs(config: OSWorldConfig) -> dict[str, Any]:
    """The keyword arguments of ``desktop_env.desktop_env.DesktopEnv`` for ``config``."""
    kwargs: dict[str, Any] = {
        "provider_name": config.provider,
        "path_to_vm": config.path_to_vm,
        "snapshot_name": config.snapshot_name,
        "action_space": config.action_space,
        "cache_dir": config.cache_dir,
        "screen_size": tuple(config.screen_size),
        "headless": config.headless,
        "require_a11y_tree": config.require_a11y_tree,
        "os_type": config.os_type,
    }
    if config.region is not None:
        kwargs["region"] = config.region
    return kwargs


def _default_factory(**kwargs: Any) -> Any:
    try:
        from desktop_env.desktop_env import DesktopEnv
    except Exception as exc:  # ImportError, or a broken dependency inside the package
        raise OSWorldUnavailable(
            f"OSWorld's environment is not importable ({type(exc).__name__}: {exc}); install it with "
            "`pip install desktop-env` (extra `rlanything[osworld]`) and set up a VM provider"
        ) from exc
    return DesktopEnv(**kwargs)


def _task_config(task: DesktopTask | dict[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(task, DesktopTask):
        return dict(task.raw)
    if isinstance(task, dict):
        config = task
    else:
        config = json.loads(Path(task).read_text())
    for key in ("id", "instruction", "evaluator"):
        if key not in config:
            raise ValueError(f"an OSWorld task needs {key!r}")
    return dict(config)


class OSWorldEnv:
    """OSWorld's ``DesktopEnv`` behind the GUI protocol.

    ``reset(task) -> observation``, ``step(action) -> (observation, done)``, ``evaluate() -> Outcome``, ``close()``.

    Args:
        config: the ``DesktopEnv`` arguments.
        factory: builds the ``DesktopEnv`` from keyword arguments (default: import ``desktop_env``).
    """

    def __init__(self, config: OSWorldConfig | None = None, *, factory: Callable[..., Any] | None = None) -> None:
        self.config = config or OSWorldConfig()
        self._env = (factory or _default_factory)(**osworld_kwargs(self.config))
        self.instruction = ""
        self.steps = 0
        self.done = True
        self.invalid_actions = 0

    def _observation(self, obs: dict[str, Any] | None, info: StepInfo | None = None) -> DesktopObservation:
        shot = None
        raw = (obs or {}).get("screenshot")
        if isinstance(raw, (bytes, bytearray)) and raw:
            from PIL import Image

            shot = Image.open(io.BytesIO(raw)).convert("RGB")
        return DesktopObservation(self.instruction, shot, self.steps, info or StepInfo())

    def reset(self, task: DesktopTask | dict[str, Any] | str | Path) -> DesktopObservation:
        """Revert the VM and run the task's set-up (OSWorld's ``reset(task_config=...)``)."""
        config = _task_config(task)
        self.instruction = str(config["instruction"])
        self.steps, self.done, self.invalid_actions = 0, False, 0
        return self._observation(self._env.reset(task_config=config))

    def step(self, action: Any) -> tuple[DesktopObservation, bool]:
        """Send one action to the VM; an action outside the configured space is counted and not sent."""
        if self.done:
            raise RuntimeError("step() after the episode ended; call reset(task)")
        self.steps += 1
        try:
            parsed = parse_action(action)
            if parsed.kind is ActionKind.CODE and self.config.action_space != "pyautogui":
                raise InvalidAction("pyautogui code in the computer_13 action space")
            if parsed.kind is ActionKind.CALLS and self.config.action_space != "computer_13":
                raise InvalidAction("a computer_13 action in the pyautogui action space")
        except InvalidAction as exc:
            self.invalid_actions += 1
            self.done = self.steps >= self.config.max_steps
            return self._observation(None, StepInfo(action, invalid=True, error=str(exc))), self.done
        if parsed.kind in (ActionKind.DONE, ActionKind.FAIL, ActionKind.WAIT):
            word = parsed.kind.value
            sent: Any = word if self.config.action_space == "pyautogui" else {"action_type": word}
        else:
            sent = action
        obs, _reward, done, _info = self._env.step(sent, self.config.pause_s)
        ended = parsed.kind in (ActionKind.DONE, ActionKind.FAIL)
        self.done = bool(done) or ended or self.steps >= self.config.max_steps
        return self._observation(obs, StepInfo(action)), self.done

    def evaluate(self) -> Outcome:
        """OSWorld's own evaluation of the episode."""
        return Outcome(float(self._env.evaluate()))

    def close(self) -> None:
        """Shut the VM down (OSWorld's ``close``)."""
        self._env.close()
