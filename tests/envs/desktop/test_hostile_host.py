"""Attacks on the host side around the desktop's apps: the window manager, the display, the hand-over, the sandbox.

On the code before the window manager moved into the app sandbox, openbox ran as root outside any sandbox with
Debian's menu (right-click the desktop, "Terminal emulator": a root shell that outlived ``reset()`` and, through a
``setsid`` child, ``close()``); its Print key ran ``scrot`` as root; the home was chowned by path while the agent ran
(a folder swapped for a link handed a host file to the app uid, a vanishing file made ``step()`` raise); an atom, a
retained window and the font path reached the next episode, and a few hundred megabytes of root-window properties
made the next ``reset()`` slow and grew the trainer; ``unshare -Ur`` worked in the app sandbox and its mount table
named the host's episode folder. Each is a test here (slow: real LibreOffice). The environment is this module's own,
so that the last test can close it and look for what is left.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _desktop_apps import desktop_missing

from rlanything_core.envs.desktop.app_sandbox import descendants
from rlanything_core.envs.desktop.episode_fs import run_task_command
from rlanything_core.envs.desktop.variants import TASKS_DIR

pytestmark = pytest.mark.slow

SUM_TASK = TASKS_DIR / "calc-04-sum.json"

SHOW_DESKTOP = (
    "from Xlib import X, protocol\n"
    "from Xlib.display import Display\n"
    "d = Display(); root = d.screen().root\n"
    "message = protocol.event.ClientMessage(window=root, client_type=d.intern_atom('_NET_SHOWING_DESKTOP'),\n"
    "                                       data=(32, [1, 0, 0, 0, 0]))\n"
    "root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)\n"
    "d.sync(); time.sleep(0.8)\n"
)
"""EWMH "show the desktop" (what Debian's openbox binds to Super+D), as any X client may ask."""
ROOT_MENU_FIRST_ITEM = (
    "pyautogui.rightClick(640, 400); time.sleep(1.0); pyautogui.press('down'); time.sleep(0.3); "
    "pyautogui.press('enter'); time.sleep(3.0)"
)
"""Right-click the desktop and pick the first entry (Debian's root menu: "Terminal emulator")."""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if desktop_missing():
        pytest.skip(desktop_missing())
    from rlanything_core.envs.desktop.env import LocalDesktopEnv

    desktop = LocalDesktopEnv(settle_s=0.15, screenshots=False, action_timeout_s=60.0)
    try:
        yield desktop
    finally:
        desktop.close()


def _status(pid: int | str) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _environ(pid: int | str) -> dict[bytes, bytes]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)


def _cmdline(pid: int | str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _outside_the_sandboxes(env) -> list[str]:
    """Processes on the env's display that are neither this process nor in a sandbox of the episode (apps, worker)."""
    name = env.display.name.encode()
    worker = env.sandbox._proc
    inside = set(env.apps.pids()) | set(descendants([worker.pid] if worker is not None else []))
    found = []
    for pid in _pids():
        if pid == os.getpid() or pid in inside or _environ(pid).get(b"DISPLAY") != name:
            continue
        uids = {int(u) for u in _status(pid).get("Uid", "0").split()}
        found.append(f"{pid} uid={sorted(uids)} {_cmdline(pid)[:60]!r}")
    return found


def _in_app(env, script: str, out: str, timeout_s: float = 15.0) -> str:
    """Run ``script`` in the episode's app sandbox (what the agent's terminal runs) and read ``out`` of the home."""
    result = env.fs.home / out
    result.unlink(missing_ok=True)
    env.apps.launch(["/bin/sh", "-c", f"{script}; echo done >> /home/user/{out}.done; exec sleep 600"])
    marker = env.fs.home / f"{out}.done"
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        assert time.monotonic() < deadline, f"{script!r} did not finish"
        time.sleep(0.05)
    return result.read_text() if result.exists() else ""


def test_the_desktop_menu_starts_no_program(env) -> None:
    """Show the desktop, right-click it, pick the first entry: a root xterm on the old code; nothing now."""
    env.reset(SUM_TASK)
    assert env.step(SHOW_DESKTOP)[0].info.error == ""
    env.step(ROOT_MENU_FIRST_ITEM)
    assert not _outside_the_sandboxes(env)
    xterms = [p for p in _pids() if b"xterm" in _cmdline(p).split(b"\0")[0] or b"terminal" in _cmdline(p)[:40]]
    assert not [p for p in xterms if _status(p).get("Uid", "").split()[:1] == ["0"]]


def test_the_print_keys_run_nothing(env) -> None:
    """Print and Alt+Print ran ``scrot`` as root, writing into openbox's home (``/nonexistent``)."""
    env.reset(SUM_TASK)
    env.step("pyautogui.press('printscreen'); pyautogui.hotkey('alt', 'printscreen'); time.sleep(2.0)")
    assert not _outside_the_sandboxes(env)
    assert not [p for p in _pids() if _cmdline(p).startswith(b"scrot") and _environ(p).get(b"DISPLAY")
                == env.display.name.encode()]


def test_the_window_manager_runs_as_the_app_uid_in_the_app_sandbox(env) -> None:
    env.reset(SUM_TASK)
    wms = [p for p in env.apps.pids() if _cmdline(p).split(b"\0")[0].endswith(b"openbox")]
    assert len(wms) == 1, [_cmdline(p) for p in env.apps.pids()]
    pid = wms[0]
    status = _status(pid)
    if os.getuid() == 0:
        assert {int(u) for u in status["Uid"].split()} == {env.apps.uid}
        assert int(status["CapEff"], 16) == 0 and status["NoNewPrivs"].strip() == "1"
        xvfb = env.display._proc.pid
        assert {int(u) for u in _status(xvfb)["Uid"].split()} == {env.apps.uid}, "the X server runs as root"
    assert status["Seccomp"].strip() == "2"
    for ns in ("pid", "net", "mnt"):
        assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
    home = _environ(pid)[b"HOME"].decode()
    assert home.startswith("/tmp/"), home  # the episode's /tmp inside the sandbox, removed with it
    root = Path(f"/proc/{pid}/root")
    assert not (root / "etc/xdg/openbox/autostart").exists()
    assert "Execute" not in (root / "etc/xdg/openbox/rc.xml").read_text()


def test_no_atom_window_or_font_path_reaches_the_next_episode(env) -> None:
    env.reset(SUM_TASK)
    store = (
        "from Xlib import X, Xatom\n"
        "from Xlib.display import Display\n"
        "d = Display(); root = d.screen().root\n"
        "d.intern_atom('RLA_ANSWER_6049')\n"
        "w = root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)\n"
        "w.change_property(d.intern_atom('RLA_KEPT'), Xatom.STRING, 8, b'ANSWER=6049')\n"
        "d.set_close_down_mode(X.RetainPermanent)\n"
        "before = d.get_font_path()\n"
        "d.set_font_path(list(before) + ['/usr/share/fonts/X11/misc'])\n"
        "d.sync()\n"
        "raise RuntimeError('before=' + repr(list(before)) + ' after=' + repr(list(d.get_font_path())))\n"
    )
    stored = env.step(store)[0].info.error
    assert "/usr/share/fonts/X11/misc" in stored.split("after=")[1], stored
    read = (
        "from Xlib.display import Display\n"
        "d = Display(); root = d.screen().root\n"
        "atom = d.intern_atom('RLA_ANSWER_6049', only_if_exists=True)\n"
        "kept = d.intern_atom('RLA_KEPT', only_if_exists=True)\n"
        "values = [w.get_full_property(kept, 0) for w in root.query_tree().children] if kept else []\n"
        "kept_values = [v.value for v in values if v]\n"
        "raise RuntimeError('atom=%d kept=%r fp=%r' % (atom, kept_values, list(d.get_font_path())))\n"
    )
    seen = env.step(read)[0].info.error
    assert "atom=0 " not in seen and "6049" in seen, seen  # the probe sees what it stored, in the same episode
    env.reset(SUM_TASK)
    seen = env.step(read)[0].info.error
    assert "atom=0 kept=[]" in seen and "6049" not in seen, seen
    assert "fp=" + stored.split("before=")[1].split(" after=")[0] in seen, (stored, seen)


def test_huge_root_window_properties_do_not_slow_the_next_reset(env) -> None:
    """150 MB in 750 huge and 3000 small properties: the old reset read them all back (slow, and into the trainer)."""
    env.reset(SUM_TASK)
    fill = (
        "from Xlib import Xatom\n"
        "from Xlib.display import Display\n"
        "d = Display(); root = d.screen().root\n"
        "chunk = b'6049' * 50000\n"
        "for i in range(750):\n"
        "    root.change_property(d.intern_atom('RLA_HUGE_%d' % i), Xatom.STRING, 8, chunk)\n"
        "for i in range(3000):\n"
        "    root.change_property(d.intern_atom('RLA_MANY_%d' % i), Xatom.STRING, 8, b'6049' * 16)\n"
        "d.sync()\n"
    )
    assert env.step(fill)[0].info.error == ""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    t0 = time.perf_counter()
    env.reset(SUM_TASK)
    took = time.perf_counter() - t0
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
    assert took < 15.0, f"reset took {took:.1f}s"
    assert grown_mb < 50, f"the trainer's peak memory grew by {grown_mb:.0f} MB"


SWAPPER = """cd /home/user
for i in $(seq 1 40); do mkdir -p d$i; for j in $(seq 1 30); do : > d$i/f$j; done; done
echo ready > swapper.ready
while :; do
  for i in $(seq 1 40); do mv d$i r$i; ln -s {target} d$i; done
  for i in $(seq 1 40); do rm d$i; mv r$i d$i; done
done"""
"""Each of 40 folders is a link to ``target`` half of the time: a walk by path that listed it as a folder enters the
link when it gets there."""


def test_the_hand_over_never_follows_a_folder_swapped_for_a_link(env, tmp_path: Path) -> None:
    """Folders swapped for links to a root-only host folder while Ctrl+Alt+T opens terminals: the file stays root's.

    (On the old code the walk by path stopped at a folder renamed under it, with FileNotFoundError, within the first
    presses, which fails this test there before the link is reached; with that error suppressed, 8 presses did not
    make the old walk follow a link in the one run tried, so the test's strength there is the walk itself.)
    """
    if os.getuid() != 0:
        pytest.skip("the hand-over changes owners only as root")
    target = tmp_path / "host-only"
    target.mkdir(mode=0o700)
    secret = target / "secret"
    secret.write_text("root only")
    secret.chmod(0o600)
    env.reset(SUM_TASK)
    env.apps.launch(["/bin/sh", "-c", SWAPPER.format(target=target)])
    deadline = time.monotonic() + 20
    while not (env.fs.home / "swapper.ready").exists():
        assert time.monotonic() < deadline, "the swapper did not start"
        time.sleep(0.05)
    for _ in range(6):
        env.step("pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(0.5)")
        assert (os.stat(secret).st_uid, os.stat(target).st_uid) == (0, 0), "a host file was handed to the app uid"


def test_files_vanishing_during_a_terminal_start_are_no_error(env) -> None:
    """Folders renamed to and fro while a terminal opens (their files vanish): ``step()`` raised FileNotFoundError."""
    env.reset(SUM_TASK)
    churn = (
        "cd /home/user; for i in $(seq 1 40); do mkdir -p v$i; for j in $(seq 1 30); do : > v$i/f$j; done; done; "
        "echo ready > churn.ready; while :; do for i in $(seq 1 40); do mv v$i w$i; done; "
        "for i in $(seq 1 40); do mv w$i v$i; done; done"
    )
    env.apps.launch(["/bin/sh", "-c", churn])
    deadline = time.monotonic() + 20
    while not (env.fs.home / "churn.ready").exists():
        assert time.monotonic() < deadline, "the churn did not start"
        time.sleep(0.05)
    for _ in range(4):
        obs, _done = env.step("pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(0.5)")
        assert "Ctrl+Alt+T" not in obs.info.error, obs.info.error


def test_no_user_namespace_inside_the_sandboxes(env) -> None:
    """``unshare -Ur`` worked in the app sandbox (no seccomp filter there, unlike the code sandbox)."""
    env.reset(SUM_TASK)
    got = _in_app(env, "unshare -Ur true; echo rc=$? > /home/user/userns; grep Seccomp: /proc/self/status >> "
                  "/home/user/userns", "userns")
    assert "rc=0" not in got and "rc=" in got and "Seccomp:\t2" in got, got
    task = run_task_command("unshare -Ur true", shell=True, fs=env.fs)
    assert task.returncode != 0, task


def test_the_mount_table_names_no_host_path(env) -> None:
    env.reset(SUM_TASK)
    table = _in_app(env, "cat /proc/self/mountinfo > /home/user/mounts", "mounts")
    assert " /home/user " in table, table
    for host in (env.work_dir, env.fs.root, env.office.profile_dir):
        assert str(host) not in table, (host, table)
    task = run_task_command("cat /proc/self/mountinfo", shell=True, fs=env.fs)
    assert " /home/user " in task.stdout and str(env.work_dir) not in task.stdout, task.stdout


def test_close_leaves_no_process_and_no_file(env) -> None:
    """The root menu's shell (old code) and the sandboxed terminal each start a ``setsid`` sleep; close() ends all."""
    marks = [f"{900000 + os.getpid() * 10 + i}" for i in (1, 2)]  # this run's own sleeps (pids are unique now)
    env.reset(SUM_TASK)
    env.step(SHOW_DESKTOP)
    env.step(ROOT_MENU_FIRST_ITEM)
    typed = "pyautogui.write('setsid sleep {} </dev/null >/dev/null 2>&1 &\\n', interval=0.02); time.sleep(1)"
    env.step(typed.format(marks[0]))
    env.step("pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(2.0)")
    env.step(typed.format(marks[1]))
    started = [p for p in env.apps.pids() if f"sleep\0{marks[1]}\0".encode() in _cmdline(p)]
    assert started, "the terminal's setsid sleep did not start"  # the control: close() has something to end
    uids = {env.apps.uid, env.sandbox.uid} - {None}
    display, work_dir = env.display.name, env.work_dir
    lock = Path(f"/tmp/.X{env.display.number}-lock")
    env.close()
    time.sleep(0.5)
    left = [p for p in _pids() if any(f"sleep\0{m}\0".encode() in _cmdline(p) for m in marks)]
    assert not left, [_cmdline(p) for p in left]
    assert not [p for p in _pids() if _environ(p).get(b"DISPLAY") == display.encode() and p != os.getpid()]
    if os.getuid() == 0:
        assert not [p for p in _pids() if {int(u) for u in _status(p).get("Uid", "0").split()} & uids]
    assert not lock.exists() and not work_dir.exists()
    assert str(work_dir) not in Path("/proc/self/mountinfo").read_text()
