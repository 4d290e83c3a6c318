"""The real thing: LibreOffice Calc on Xvfb, actions in the sandbox, OSWorld's evaluation (slow; runs in CI).

Every shipped task scores 1.0 with its scripted solution and 0.0 with its wrong one; a task written elsewhere in the
same format runs; bad actions are counted; a hung action is killed; the sandbox reaches only the display; nothing is
left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _desktop_apps import desktop_missing, running

from rlanything_core.envs.desktop.cli import load_actions, run_task
from rlanything_core.envs.desktop.variants import TASKS_DIR, shipped_tasks

pytestmark = pytest.mark.slow
TASK_IDS = [t.task_id for t in shipped_tasks()]
REPO = Path(__file__).resolve().parents[3]


# every fifth task under CI (its time budget), all 22 under `make test-heavy` (and `python -m benchmarks.bench_desktop`)
@pytest.mark.parametrize("task_id", [t if k % 5 == 0 else pytest.param(t, marks=pytest.mark.heavy)
                                     for k, t in enumerate(TASK_IDS)])  # fmt: skip
def test_scripted_solution_scores_one_and_wrong_scores_zero(desktop_env, task_id: str) -> None:
    task = TASKS_DIR / f"{task_id}.json"
    good = run_task(task, load_actions(TASKS_DIR / "solutions" / f"{task_id}.good.py"), env=desktop_env)
    assert (good["score"], good["error"]) == (1.0, ""), good
    wrong = run_task(task, load_actions(TASKS_DIR / "solutions" / f"{task_id}.wrong.py"), env=desktop_env)
    assert wrong["score"] == 0.0, wrong
    assert good["done"] and wrong["done"]


def test_bad_actions_are_counted_and_the_episode_goes_on(desktop_env) -> None:
    env = desktop_env
    env.reset(TASKS_DIR / f"{TASK_IDS[0]}.json")
    obs, done = env.step("pyautogui.click(")  # does not compile
    assert obs.info.invalid and not done
    obs, done = env.step({"action_type": "TELEPORT"})
    assert obs.info.invalid and not done
    obs, done = env.step("raise ValueError('from the agent')")  # runs, fails in the sandbox
    assert "from the agent" in obs.info.error and not obs.info.invalid and not done
    assert (env.invalid_actions, env.action_errors) == (2, 1)
    for action in load_actions(TASKS_DIR / "solutions" / f"{TASK_IDS[0]}.good.py"):
        obs, done = env.step(action)
    assert done and env.evaluate().score == 1.0


def test_step_limit_and_hung_action(desktop_env) -> None:
    env = desktop_env
    env.reset(TASKS_DIR / f"{TASK_IDS[0]}.json")
    saved = env.sandbox.action_timeout_s, env.max_steps
    env.sandbox.action_timeout_s, env.max_steps = 2.0, 3
    kills = env.sandbox.kills
    try:
        obs, done = env.step("while True: pass")
        assert "timed out" in obs.info.error and not done
        obs, done = env.step("WAIT")
        assert not done
        obs, done = env.step("pyautogui.press('escape')")  # a fresh worker runs the next action
        assert obs.info.error == "" and done  # third step: the limit
        assert env.sandbox.kills == kills + 1
        with pytest.raises(RuntimeError, match="reset"):
            env.step("DONE")
        assert env.evaluate().score == 0.0  # nothing was done
    finally:
        env.sandbox.action_timeout_s, env.max_steps = saved


def test_actions_reach_only_the_display(desktop_env) -> None:
    env = desktop_env
    env.reset(TASKS_DIR / f"{TASK_IDS[0]}.json")
    if not env.sandbox.bwrap:
        pytest.skip("bubblewrap does not work here")
    probes = {
        "uid": "import os; raise RuntimeError(f'uid={os.getuid()}')",
        "write": f"open({str(REPO / 'pwned.txt')!r}, 'w')",
        "net": "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)",
        "task": f"import os; raise RuntimeError('listing=' + str(os.listdir({str(TASKS_DIR)!r})))",
        "work": f"import os; raise RuntimeError('listing=' + str(os.listdir({str(env.work_dir)!r})))",
    }
    errors = {k: env.step(code)[0].info.error for k, code in probes.items()}
    if os.getuid() == 0 and env.sandbox.unprivileged:
        assert f"uid={env.sandbox.uid}" in errors["uid"] and env.sandbox.uid != 0
    assert any(w in errors["write"] for w in ("Read-only", "Permission", "No such file")), errors["write"]
    assert not (REPO / "pwned.txt").exists()
    assert "unreachable" in errors["net"].lower() or "Errno" in errors["net"]
    for hidden in ("task", "work"):  # the sandbox's filesystem is an allow-list: these do not exist inside
        assert "listing=[]" in errors[hidden] or "No such file or directory" in errors[hidden], errors[hidden]


def test_a_task_written_elsewhere_runs(desktop_env, tmp_path: Path) -> None:
    """OSWorld-style JSON as another author writes it: an http download shipped beside it, launch by command,
    shell set-up, a postconfig save, and two metrics joined by ``and``."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Data"
    book.active.append(["Item", "Qty"])
    book.active.append(["Pen", 3])
    book.save(tmp_path / "inventory.xlsx")
    task = {
        "id": "elsewhere-1",
        "snapshot": "libreoffice_calc",
        "instruction": "Set the quantity of Pen to 5.",
        "source": "test",
        "config": [
            {"type": "execute", "parameters": {"command": "mkdir -p ~/Documents && echo ready > ~/Documents/log.txt",
                                               "shell": True}},
            {"type": "download", "parameters": {"files": [
                {"url": "https://example.org/files/inventory.xlsx", "path": "/home/user/Documents/inventory.xlsx"}]}},
            {"type": "launch", "parameters": {"command": ["libreoffice", "--calc",
                                                          "/home/user/Documents/inventory.xlsx"]}},
            {"type": "sleep", "parameters": {"seconds": 0.2}},
        ],
        "related_apps": ["libreoffice_calc"],
        "evaluator": {
            "postconfig": [
                {"type": "activate_window", "parameters": {"window_name": "inventory.xlsx - LibreOffice Calc",
                                                           "strict": True}},
                {"type": "execute", "parameters": {"command": [
                    "python", "-c", "import pyautogui; import time; pyautogui.hotkey('ctrl', 's'); time.sleep(0.5)"]}},
                {"type": "sleep", "parameters": {"seconds": 0.3}},
            ],
            "func": ["compare_table", "check_include_exclude"],
            "conj": "and",
            "result": [
                {"type": "vm_file", "path": "/home/user/Documents/inventory.xlsx", "dest": "inventory.xlsx"},
                {"type": "vm_command_line", "command": "cat ~/Documents/log.txt", "shell": True},
            ],
            "expected": [{}, {}],
            "options": [
                {"rules": [{"type": "check_cell", "sheet_idx": "RNData", "coordinate": "B2",
                            "props": {"value": {"method": "eq", "ref": 5.0}}}]},
                {"rules": {"include": ["ready"], "exclude": ["error"]}},
            ],
        },
    }
    path = tmp_path / "task.json"
    path.write_text(json.dumps(task))
    goto = "pyautogui.click(65, 107); pyautogui.write('B2\\n')"
    right = run_task(path, [goto, "pyautogui.write('5\\n')", "DONE"], env=desktop_env)
    assert (right["score"], right["error"]) == (1.0, ""), right
    assert right["metrics"] == [["compare_table", 1.0], ["check_include_exclude", 1.0]]
    wrong = run_task(path, [goto, "pyautogui.write('6\\n')", "DONE"], env=desktop_env)
    assert wrong["score"] == 0.0 and wrong["metrics"] == [["compare_table", 0.0]]


def test_command_line_and_clean_teardown(tmp_path: Path) -> None:
    """The command for people (its own display and app), then a dead display ends an episode, nothing left."""
    from rlanything_core.envs.desktop.env import LocalDesktopEnv

    if desktop_missing():
        pytest.skip(desktop_missing())
    tid = TASK_IDS[0]
    shot = tmp_path / "final.png"
    cmd = [sys.executable, "-m", "rlanything_core.envs.desktop", "run-task", str(TASKS_DIR / f"{tid}.json")]
    cmd += ["--actions", str(TASKS_DIR / "solutions" / f"{tid}.good.py"), "--screenshot", str(shot)]
    env_vars = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env_vars, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["score"] == 1.0 and report["steps"] == 3 and report["done"] and report["error"] == ""
    from PIL import Image

    assert report["wall_s"] > 0 and Image.open(shot).size == (1280, 800)

    env = LocalDesktopEnv(screenshots=True)
    try:
        obs = env.reset(TASKS_DIR / f"{tid}.json")
        assert obs.screenshot.size == (1280, 800)
        office_pids = env.office.pids()
        assert office_pids
        os.killpg(env.display._proc.pid, signal.SIGKILL)  # the display dies under the app
        env.display._proc.wait(timeout=10)
        obs, done = env.step("WAIT")
        assert done and "died" in env.failure
        outcome = env.evaluate()
        assert outcome.score == 0.0 and "died" in outcome.error
    finally:
        env.close()
    assert not env.office.pids() and not env.display.alive
    assert not any(running(p) for p in office_pids)
    assert not env.work_dir.exists()
