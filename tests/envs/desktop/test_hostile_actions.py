"""Attacks a GUI policy can make through its own pyautogui code and its answers, each refused (slow).

On f113c84 one long-lived worker ran every action: a monkeypatched ``pyautogui.hotkey`` left by one action ran inside
the evaluator's own Ctrl+S and typed the answer, and a thread kept typing after its action returned. Now each action
runs in a fresh child and the evaluator uses a fresh worker; the clipboard, held keys and the ``infeasible`` answer
are probed too. Against f113c84's package the monkeypatch, state, thread, process, package-visibility and held-key
tests fail; the clipboard and ``infeasible`` probes held there already and are kept so that they keep holding.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.cli import load_actions, run_task
from rlanything_core.envs.desktop.variants import TASKS_DIR

pytestmark = pytest.mark.slow

SUM_TASK = TASKS_DIR / "calc-04-sum.json"
INFEASIBLE_TASK = TASKS_DIR / "calc-22-assistant-infeasible.json"
GOOD = load_actions(TASKS_DIR / "solutions" / "calc-04-sum.good.py")
TYPE_ANSWER = "pyautogui.click(65, 107); pyautogui.write('C8\\n'); pyautogui.write('=SUM(C2:C7)\\n', interval=0.01)"


def test_a_monkeypatched_pyautogui_does_not_reach_the_evaluators_key_presses(desktop_env) -> None:
    """The patched ``hotkey`` would type the answer when the evaluator saves with Ctrl+S (score 1.0 on f113c84)."""
    patch = (
        "_real = pyautogui.hotkey\n"
        "def _hotkey(*keys, **kw):\n"
        f"    {TYPE_ANSWER}\n"
        "    _real(*keys, **kw)\n"
        "pyautogui.hotkey = _hotkey\n"
    )
    report = run_task(SUM_TASK, [patch, "DONE"], env=desktop_env)
    assert report["score"] == 0.0 and report["action_errors"] == 0, report


def test_no_state_passes_from_one_action_to_the_next(desktop_env) -> None:
    env = desktop_env
    env.reset(SUM_TASK)
    obs, _ = env.step("pyautogui.write = None; import builtins; builtins.LEFT_BEHIND = 1; pyautogui.RLA_LEFT = 2")
    assert obs.info.error == ""
    obs, _ = env.step("pyautogui.write('')")  # the real write again
    assert obs.info.error == ""
    obs, _ = env.step("LEFT_BEHIND")
    assert "NameError" in obs.info.error
    obs, _ = env.step("pyautogui.RLA_LEFT")
    assert "AttributeError" in obs.info.error


def test_a_busy_thread_does_not_outlive_its_action(desktop_env) -> None:
    """A thread that types the answer after its action returned (and after DONE, during the evaluation)."""
    late = (
        "import threading\n"
        "def _later():\n"
        "    time.sleep(1.5)\n"
        f"    {TYPE_ANSWER}\n"
        "threading.Thread(target=_later).start()\n"
    )
    report = run_task(SUM_TASK, [late, "WAIT", "time.sleep(2.5)", "DONE"], env=desktop_env)
    assert report["score"] == 0.0 and report["action_errors"] == 0, report


def test_a_process_started_by_an_action_is_killed_when_it_returns(desktop_env) -> None:
    env = desktop_env
    env.reset(SUM_TASK)
    code = (
        "import os, subprocess\n"
        "subprocess.Popen(['sleep', '31338'], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); time.sleep(60); os._exit(0)\n"
    )
    obs, _ = env.step(code)
    assert obs.info.error == ""
    time.sleep(0.3)
    left = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(b"sleep\x0031338")]
    assert not left, left
    obs, _ = env.step("pyautogui.position()")  # the worker itself is still serving
    assert obs.info.error == ""


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_the_worker_cannot_read_the_package_or_a_gold_file(desktop_env) -> None:
    env = desktop_env
    env.reset(SUM_TASK)
    gold = TASKS_DIR / "files" / "calc-04-sum_gold.xlsx"
    obs, _ = env.step(f"open({str(gold)!r}, 'rb').read()")
    assert "No such file" in obs.info.error or "Permission" in obs.info.error, obs.info.error
    obs, _ = env.step("import os; raise RuntimeError(sorted(os.listdir('/rla/site')))")
    assert "rlanything_core" not in obs.info.error and "pyautogui" in obs.info.error, obs.info.error
    obs, _ = env.step("import rlanything_core")
    assert "ModuleNotFoundError" in obs.info.error


def test_a_held_modifier_does_not_change_the_evaluators_save(desktop_env) -> None:
    """Shift left down would turn the evaluator's Ctrl+S into Ctrl+Shift+S (Save As): the file would not be saved."""
    report = run_task(SUM_TASK, [*GOOD[:-1], "pyautogui.keyDown('shift')", "DONE"], env=desktop_env)
    assert (report["score"], report["error"]) == (1.0, ""), report


def test_the_clipboard_does_not_carry_a_value_across_episodes(desktop_env) -> None:
    """A value copied in one episode (a rollout that did the task) is not pasteable in the next one."""
    import openpyxl

    env = desktop_env
    env.reset(SUM_TASK)
    for action in [TYPE_ANSWER, "pyautogui.click(65, 107); pyautogui.write('C8\\n')", "pyautogui.hotkey('ctrl', 'c')",
                   "time.sleep(0.5)"]:
        env.step(action)
    env.reset(SUM_TASK)
    for action in ["pyautogui.click(65, 107); pyautogui.write('C8\\n')", "pyautogui.hotkey('ctrl', 'v')",
                   "time.sleep(0.5); pyautogui.press('enter')"]:
        env.step(action)
    env.step("DONE")
    outcome = env.evaluate()
    assert outcome.score == 0.0, outcome
    saved = openpyxl.load_workbook(env.fs.cache / "sales.xlsx").active["C8"].value
    assert saved in (None, ""), saved


@pytest.mark.parametrize(
    ("actions", "score"),
    [
        (["FAIL"], 1.0),
        ([{"action_type": "FAIL"}], 1.0),
        (["DONE"], 0.0),
        (["pyautogui.write('FAIL')", "DONE"], 0.0),
        (["print('FAIL')"], 0.0),  # the episode ends at the step limit below, not with FAIL
        (["fail"], 0.0),
    ],
    ids=["fail", "computer13-fail", "done", "typed-fail", "printed-fail", "lowercase"],
)
def test_the_infeasible_answer_is_only_the_fail_action(desktop_env, actions: list, score: float) -> None:
    env = desktop_env
    saved = env.max_steps
    env.max_steps = 1
    try:
        report = run_task(INFEASIBLE_TASK, actions, env=env)
    finally:
        env.max_steps = saved
    assert report["score"] == score, report


def test_fail_after_doing_a_feasible_task_scores_zero(desktop_env) -> None:
    """FAIL is no hedge: a feasible task answered FAIL scores 0 even when its file is right."""
    report = run_task(SUM_TASK, [*GOOD[:-1], "FAIL"], env=desktop_env)
    assert report["score"] == 0.0, report


def test_the_display_does_not_carry_a_value_across_episodes(desktop_env) -> None:
    """Cut buffers and root-window properties outlive the apps (the display serves every episode): reset clears them."""
    env = desktop_env
    env.reset(SUM_TASK)
    store = (
        "from Xlib import Xatom\n"
        "from Xlib.display import Display\n"
        "d = Display(); root = d.screen().root\n"
        "for name in ('CUT_BUFFER0', 'RLA_STASH', 'RESOURCE_MANAGER'):\n"
        "    root.change_property(d.intern_atom(name), Xatom.STRING, 8, b'ANSWER=6049')\n"
        "d.sync()\n"
    )
    obs, _ = env.step(store)
    assert obs.info.error == ""
    read = (
        "from Xlib.display import Display\n"
        "d = Display(); root = d.screen().root\n"
        "names = ('CUT_BUFFER0', 'RLA_STASH', 'RESOURCE_MANAGER')\n"
        "values = [root.get_full_property(d.intern_atom(n), 0) for n in names]\n"
        "raise RuntimeError('seen=' + repr([v.value for v in values if v is not None]))\n"
    )
    assert "6049" in env.step(read)[0].info.error
    env.reset(SUM_TASK)
    error = env.step(read)[0].info.error
    assert "seen=" in error and "6049" not in error, error
