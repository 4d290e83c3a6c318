"""Attacks a GUI policy can make through LibreOffice itself, each refused (slow: real LibreOffice).

On f113c84 LibreOffice ran as root with the whole host visible: a formula referencing the task's gold workbook
copied the expected value (score 1.0 with no arithmetic), a macro ran shell commands as root, a ``setsid`` process
outlived ``close()``, a macro saved in the profile reached the next task, and LibreOffice left files in the host's
``/tmp``. Each of those is a test here, plus the file dialog, DDE/WEBSERVICE links and the macro dialogs. Run
against f113c84's package, the formula, DDE, file-dialog, uid/namespace, macro-dialog, daemon, profile and /tmp tests
fail (the WEBSERVICE probes already scored 0 there).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _desktop_apps import running

from rlanything_core.envs.desktop.cli import load_actions, run_task
from rlanything_core.envs.desktop.office import find_windows
from rlanything_core.envs.desktop.variants import TASKS_DIR

pytestmark = pytest.mark.slow

SUM_TASK = TASKS_DIR / "calc-04-sum.json"
GOLD = TASKS_DIR / "files" / "calc-04-sum_gold.xlsx"
GOTO_C8 = "pyautogui.click(65, 107); pyautogui.write('C8\\n')"


def _type(text: str) -> str:
    return f"pyautogui.write({text!r}, interval=0.01)"


def _soffice_pid(env) -> int:
    for pid in env.office.pids():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"soffice.bin"):
                return pid
        except OSError:
            continue
    raise AssertionError(f"no soffice.bin among {env.office.pids()}")


def test_the_good_solution_still_scores_one(desktop_env) -> None:
    """The control for the attacks below: the same task, done honestly, scores 1.0 under the sandbox."""
    good = run_task(SUM_TASK, load_actions(TASKS_DIR / "solutions" / "calc-04-sum.good.py"), env=desktop_env)
    assert (good["score"], good["error"]) == (1.0, ""), good


def test_formula_reference_to_the_gold_workbook_scores_zero(desktop_env) -> None:
    """``='file:///…_gold.xlsx'#$Sheet1.C8`` copied the expected value on f113c84; the app cannot see the file."""
    assert GOLD.is_file()
    formula = f"='{GOLD.as_uri()}'#$Sheet1.C8\n"
    report = run_task(SUM_TASK, [GOTO_C8, _type(formula), "DONE"], env=desktop_env)
    assert report["score"] == 0.0, report


@pytest.mark.parametrize(
    "formula",
    [
        f'=DDE("soffice";"{GOLD}";"Sheet1.C8")\n',
        f'=WEBSERVICE("{GOLD.as_uri()}")\n',
        f'=VALUE(WEBSERVICE("{GOLD.as_uri()}"))\n',
    ],
    ids=["dde", "webservice", "webservice-value"],
)
def test_dde_and_webservice_links_do_not_reach_the_gold_workbook(desktop_env, formula: str) -> None:
    report = run_task(SUM_TASK, [GOTO_C8, _type(formula), "DONE"], env=desktop_env)
    assert report["score"] == 0.0, report


def test_the_file_dialog_cannot_open_host_paths(desktop_env) -> None:
    """Ctrl+O and the gold file's host path (or the package's folder): nothing opens, the app does not see them."""
    env = desktop_env
    env.reset(SUM_TASK)
    for path in (GOLD, TASKS_DIR / "calc-04-sum.json"):
        env.step("pyautogui.hotkey('ctrl', 'o'); time.sleep(1.5)")
        env.step(_type(f"{path}\n") + "; time.sleep(2.0)")
        assert not find_windows(env.display, path.name), f"{path} opened in the app"
        env.step("pyautogui.press('escape'); time.sleep(0.3); pyautogui.press('escape'); time.sleep(0.3)")
    root = Path(f"/proc/{_soffice_pid(env)}/root")
    assert not (root / str(GOLD).lstrip("/")).exists() and not (root / str(TASKS_DIR).lstrip("/")).exists()


def test_the_app_runs_unprivileged_in_its_own_namespaces(desktop_env) -> None:
    """LibreOffice: not root, no host network or pids, a file system of /usr, the display and its own folders."""
    env = desktop_env
    env.reset(SUM_TASK)
    pid = _soffice_pid(env)
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    uids = {int(u) for u in status["Uid"].split()}
    if os.getuid() == 0:
        assert 0 not in uids and uids == {env.apps.uid}, status["Uid"]
        assert int(status["CapEff"], 16) == 0 and int(status["NoNewPrivs"]) == 1
    for ns in ("net", "pid", "ipc"):
        assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
    root = Path(f"/proc/{pid}/root")
    assert sorted(p.name for p in (root / "home").iterdir()) == ["user"]
    assert (root / "home/user/sales.xlsx").is_file()
    for hidden in ("root", "work", "run", "var/lib", "etc/shadow", str(Path.cwd()).lstrip("/")):
        assert not (root / hidden).exists(), hidden
    inside_tmp = sorted(p.name for p in (root / "tmp").iterdir())
    # .wm: the window manager's home, an app of the episode too
    assert all(n in (".X11-unix", ".wm") or n.startswith(("OSL_PIPE", "lu")) for n in inside_tmp), inside_tmp


def test_the_basic_ide_and_macro_dialogs_do_not_open(desktop_env) -> None:
    """Tools > Macros (Alt+F11 and the menu) ran a Basic ``Shell`` as root on f113c84: no macro dialog opens now."""
    env = desktop_env
    env.reset(SUM_TASK)
    attempts = [
        "pyautogui.hotkey('alt', 'f11'); time.sleep(2.0)",  # Tools > Macros > Organize Macros > Basic
        "pyautogui.hotkey('alt', 't'); time.sleep(0.8); pyautogui.press('m'); time.sleep(0.8); "
        "pyautogui.press('e'); time.sleep(2.0)",  # Tools > Macros > Edit Macros
        "pyautogui.hotkey('alt', 't'); time.sleep(0.8); pyautogui.press('o'); time.sleep(2.0)",  # Tools > Options
    ]
    for attempt in attempts:
        env.step(attempt)
        titles = {w for name in ("Basic", "Macro", "Options") for w in find_windows(env.display, name)}
        assert not titles, f"a macro or options window opened after {attempt!r}"
        env.step("pyautogui.press('escape'); pyautogui.press('escape')")
    profile = (env.office.profile_dir / "user" / "registrymodifications.xcu").read_text()
    assert "DisableMacrosExecution" in profile and "BasicIDEAppear" in profile


def test_a_setsid_daemon_does_not_outlive_the_episode(desktop_env) -> None:
    """A process started in the app sandbox with ``setsid`` (the way a macro's Shell detached) dies with reset/close.

    The app that detaches it stays alive (as soffice does after a macro's Shell): a launcher that exited at once would
    end its sandbox's pid namespace, and the daemon with it, before the test could see it start (the test was racy).
    """
    env = desktop_env
    env.reset(SUM_TASK)
    env.apps.launch(["/bin/sh", "-c", "setsid sleep 31337 </dev/null >/dev/null 2>&1 & exec sleep 600"])
    deadline = time.monotonic() + 10
    daemons: list[int] = []
    while not daemons and time.monotonic() < deadline:
        daemons = [p for p in env.apps.pids() if b"31337" in Path(f"/proc/{p}/cmdline").read_bytes()]
        time.sleep(0.1)
    assert daemons, "the daemon did not start"
    env.reset(SUM_TASK)
    assert not any(running(p) for p in daemons)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, b"sleep\x0031337")]


def _cmdline_has(pid: str, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_the_profile_is_fresh_after_reset(desktop_env) -> None:
    """A Basic module saved into the profile in one episode (how a macro persisted across tasks) is gone next task."""
    env = desktop_env
    env.reset(SUM_TASK)
    basic = env.office.profile_dir / "user" / "basic" / "Standard"
    basic.mkdir(parents=True, exist_ok=True)
    (basic / "Evil.xba").write_text("Sub Main\n Shell(\"/bin/sh -c 'id > /tmp/pwned'\")\nEnd Sub\n")
    settings = env.office.profile_dir / "user" / "registrymodifications.xcu"
    settings.write_text(settings.read_text().replace("DisableMacrosExecution", "DisableMacrosExecutionX"))
    env.reset(SUM_TASK)
    assert not (basic / "Evil.xba").exists()
    assert "DisableMacrosExecutionX" not in settings.read_text() and "DisableMacrosExecution" in settings.read_text()


def test_nothing_is_left_in_the_hosts_tmp(tmp_path: Path) -> None:
    """LibreOffice's ``lu*.tmp`` folders and ``OSL_PIPE_*`` sockets land in the episode's own /tmp, then go.

    (Checked through the app's own view of ``/tmp``, not by listing the host's ``/tmp``: other programs on a shared
    machine put LibreOffice litter there too.)
    """
    from _desktop_apps import desktop_missing

    from rlanything_core.envs.desktop.env import LocalDesktopEnv

    if desktop_missing():
        pytest.skip(desktop_missing())
    env = LocalDesktopEnv(work_dir=tmp_path / "work", screenshots=False)
    try:
        env.reset(SUM_TASK)
        app_tmp = os.stat(f"/proc/{_soffice_pid(env)}/root/tmp")
        host_tmp = os.stat("/tmp")
        assert (app_tmp.st_dev, app_tmp.st_ino) != (host_tmp.st_dev, host_tmp.st_ino), "the app writes the host's /tmp"
        episode_tmp = os.stat(env.apps.tmp_dir)
        assert (app_tmp.st_dev, app_tmp.st_ino) == (episode_tmp.st_dev, episode_tmp.st_ino)
        litter = [n for n in os.listdir(env.apps.tmp_dir) if n.startswith(("OSL_PIPE_", "lu"))]
        assert any(n.startswith("OSL_PIPE_") for n in litter) and any(n.endswith(".tmp") for n in litter), litter
        for action in load_actions(TASKS_DIR / "solutions" / "calc-04-sum.good.py"):
            env.step(action)
        assert env.evaluate().score == 1.0
    finally:
        env.close()
    assert not env.apps.tmp_dir.exists() and env.apps.tmp_dir.is_relative_to(tmp_path)
