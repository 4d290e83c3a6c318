"""OSWorld adapter without a VM: import error, argument mapping, action-space and task checks.

Only the provider call (a real VM) cannot run here; ``factory`` stands in for ``DesktopEnv`` to record what the adapter
sends it, in OSWorld's own call signatures (``reset(task_config=)``, ``step(action, pause)``, ``evaluate()``).
"""

from __future__ import annotations

import importlib.util
import io
from typing import Any

import pytest

from rlanything_core.envs.desktop.osworld_adapter import (
    OSWorldConfig,
    OSWorldEnv,
    OSWorldUnavailable,
    osworld_kwargs,
)
from rlanything_core.envs.desktop.variants import TASKS_DIR, shipped_tasks


class RecordingDesktopEnv:
    """Records the calls OSWorld's DesktopEnv would receive; answers like it (PNG bytes, 4-tuples, a float)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[tuple[str, Any]] = []

    @staticmethod
    def _png() -> bytes:
        from PIL import Image

        buf = io.BytesIO()
        Image.new("RGB", (32, 20), "white").save(buf, format="PNG")
        return buf.getvalue()

    def reset(self, task_config: dict) -> dict:
        self.calls.append(("reset", task_config["id"]))
        return {"screenshot": self._png(), "instruction": task_config["instruction"]}

    def step(self, action: Any, pause: float) -> tuple[dict, float, bool, dict]:
        self.calls.append(("step", action))
        return {"screenshot": self._png()}, 0.0, action in ("DONE", "FAIL"), {}

    def evaluate(self) -> float:
        self.calls.append(("evaluate", None))
        return 1.0

    def close(self) -> None:
        self.calls.append(("close", None))


def test_missing_package_is_a_clear_error() -> None:
    if importlib.util.find_spec("desktop_env") is not None:
        pytest.skip("desktop-env is installed here")
    with pytest.raises(OSWorldUnavailable, match="pip install desktop-env"):
        OSWorldEnv(OSWorldConfig(provider="docker"))


def test_argument_mapping() -> None:
    kwargs = osworld_kwargs(OSWorldConfig(provider="aws", region="us-east-1", screen_size=(1280, 720)))
    assert kwargs["provider_name"] == "aws" and kwargs["region"] == "us-east-1"
    assert kwargs["screen_size"] == (1280, 720) and kwargs["action_space"] == "pyautogui"
    assert "region" not in osworld_kwargs(OSWorldConfig(provider="vmware", path_to_vm="/vms/Ubuntu.vmx"))
    for bad in (
        {"provider": "qemu"},
        {"action_space": "mouse"},
        {"provider": "docker", "region": "eu"},
        {"os_type": "Mac"},
        {"screen_size": (10, 10)},
        {"max_steps": 0},
    ):
        with pytest.raises(ValueError):
            OSWorldConfig(**bad)


def test_episode_goes_through_osworld_calls() -> None:
    made: list[RecordingDesktopEnv] = []

    def factory(**kwargs: Any) -> RecordingDesktopEnv:
        made.append(RecordingDesktopEnv(**kwargs))
        return made[-1]

    env = OSWorldEnv(OSWorldConfig(provider="docker", pause_s=0.0), factory=factory)
    task = shipped_tasks()[0]
    obs = env.reset(TASKS_DIR / f"{task.task_id}.json")
    assert obs.instruction == task.instruction and obs.screenshot.size == (32, 20)
    obs, done = env.step({"action_type": "CLICK"})  # wrong space: counted, not sent
    assert obs.info.invalid and not done and env.invalid_actions == 1
    obs, done = env.step("pyautogui.press('enter')")
    assert not done
    obs, done = env.step("DONE")
    assert done and env.evaluate().score == 1.0
    env.close()
    assert made[0].kwargs["provider_name"] == "docker"
    assert made[0].calls == [
        ("reset", task.task_id),
        ("step", "pyautogui.press('enter')"),
        ("step", "DONE"),
        ("evaluate", None),
        ("close", None),
    ]
    with pytest.raises(RuntimeError, match="reset"):
        env.step("DONE")


def test_computer13_space_and_bad_tasks() -> None:
    env = OSWorldEnv(OSWorldConfig(action_space="computer_13", max_steps=2), factory=RecordingDesktopEnv)
    env.reset(shipped_tasks()[0])
    env.step({"action_type": "CLICK", "parameters": {"x": 1, "y": 2}})
    _, done = env.step("FAIL")
    assert done and env._env.calls[-1] == ("step", {"action_type": "FAIL"})
    with pytest.raises(ValueError, match="evaluator"):
        env.reset({"id": "x", "instruction": "y"})
