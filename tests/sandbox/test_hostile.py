"""Hostile programs: each gets the right verdict and leaves the host untouched."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rlanything_core
import rlanything_core.sandbox.sandbox as sandbox_module
from rlanything_core.sandbox import FunctionalTest, Sandbox, SandboxConfig, StdinTest, Verdict, bwrap_status

UID_BASE = SandboxConfig().uid
SANDBOX_UIDS = range(UID_BASE, UID_BASE + 2 * SandboxConfig().max_slots)
pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="the hostile corpus checks the uid drop: run as root (CI)")
needs_bwrap = pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap not working here")


def uid_processes() -> list[int]:
    """Processes of any sandbox uid (every slot)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid in SANDBOX_UIDS:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def assert_no_leftovers() -> None:
    deadline = time.monotonic() + 3.0
    while uid_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uid_processes() == [], "processes of the sandbox uid survived the run"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(
        SandboxConfig(time_limit_s=2.0, memory_mb=512, output_limit_bytes=1 << 20, file_size_mb=4, use_bwrap=True)
    )


@pytest.fixture()
def world_dir() -> Iterator[Path]:
    """A host directory writable by everyone (only the read-only filesystem can stop a write into it)."""
    d = Path(tempfile.mkdtemp(prefix="rla_hostile_", dir="/var/tmp"))
    os.chmod(d, 0o777)
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


def run1(
    sandbox: Sandbox,
    program: str,
    stdin: bytes | str = b"",
    expected: str | None = None,
    time_limit_s: float | None = None,
):  # noqa: ANN201
    result = sandbox.run(program, [StdinTest(stdin, expected, time_limit_s)])
    assert result.bwrap is sandbox.bwrap
    assert_no_leftovers()
    return result.tests[0]


@needs_bwrap
def test_fork_bomb(sandbox: Sandbox) -> None:
    prog = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = run1(sandbox, prog, time_limit_s=1.5)
    assert r.verdict is Verdict.TIMEOUT


@needs_bwrap
def test_memory_hog(sandbox: Sandbox) -> None:
    r = run1(sandbox, "a = []\nwhile True:\n    a.append(bytearray(10**8))\n", time_limit_s=10.0)
    assert r.verdict is Verdict.MEMORY


@needs_bwrap
def test_sigterm_immune_loop_dies(sandbox: Sandbox) -> None:
    prog = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    r = run1(sandbox, prog, time_limit_s=1.0)
    assert r.verdict is Verdict.TIMEOUT and r.wall_s < 2.0


@needs_bwrap
def test_double_fork_setsid_daemon_is_killed(sandbox: Sandbox) -> None:
    prog = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.close(1); os.close(2)\n"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print('ok')\n"
    )
    r = run1(sandbox, prog, expected="ok")
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_child_holding_the_pipe_does_not_hang(sandbox: Sandbox) -> None:
    prog = "import os, time\nif os.fork() == 0:\n    time.sleep(1000)\nprint('ok')\n"
    r = run1(sandbox, prog, expected="ok", time_limit_s=5.0)
    assert r.verdict is Verdict.PASSED and r.wall_s < 2.0


@needs_bwrap
def test_network_is_blocked(sandbox: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        prog = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'x')\nprint('ok')\n"
        r = run1(sandbox, prog, expected="ok")
        assert r.verdict is Verdict.RUNTIME_ERROR
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


@needs_bwrap
def test_writes_outside_temp_dir_fail(sandbox: Sandbox, world_dir: Path, tmp_path: Path) -> None:
    targets = [world_dir / "pwned", tmp_path / "pwned", Path("/var/tmp/rla_pwned_top")]
    prog = (
        "import sys\nok = 0\n"
        f"for p in {[str(t) for t in targets]!r}:\n"
        "    try:\n        open(p, 'w').write('x'); ok += 1\n    except OSError:\n        pass\n"
        "open('local.txt', 'w').write('fine')\n"
        "print(ok)\n"
    )
    r = run1(sandbox, prog, expected="0")
    assert r.verdict is Verdict.PASSED
    assert not any(t.exists() for t in targets)


@needs_bwrap
def test_cannot_read_root_only_file(sandbox: Sandbox, world_dir: Path) -> None:
    secret = world_dir / "secret.txt"
    secret.write_text("TOPSECRET")
    os.chmod(secret, stat.S_IRUSR | stat.S_IWUSR)
    r = run1(sandbox, f"print(open({str(secret)!r}).read())\n")
    assert r.verdict is Verdict.RUNTIME_ERROR and ("PermissionError" in r.stderr or "FileNotFoundError" in r.stderr)
    assert "TOPSECRET" not in r.stdout


@needs_bwrap
def test_environment_secrets_do_not_leak(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLA_TEST_SECRET_TOKEN", "hf_s3cr3t")
    r = run1(sandbox, "import os\nprint(os.environ)\nprint(open('/proc/1/cmdline','rb').read())\n")
    assert "hf_s3cr3t" not in r.stdout


@needs_bwrap
def test_host_processes_invisible(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import os\nprint(sum(n.isdigit() for n in os.listdir('/proc')) < 10)\n", expected="True")
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_huge_output_is_capped(sandbox: Sandbox) -> None:
    r = run1(sandbox, "while True:\n    print('x' * 10000)\n")
    assert r.verdict is Verdict.OUTPUT_LIMIT and len(r.stdout) <= 1 << 20 and r.wall_s < 1.5


@needs_bwrap
def test_closing_stdout_early(sandbox: Sandbox) -> None:
    prog = "import os, sys, time\nprint(42)\nsys.stdout.flush()\nos.close(1)\nos.close(2)\ntime.sleep(0.3)\n"
    r = run1(sandbox, prog, expected="42")
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_closing_stdout_then_looping_times_out(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import os\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n", time_limit_s=1.0)
    assert r.verdict is Verdict.TIMEOUT


@needs_bwrap
def test_binary_stdin_buffer(sandbox: Sandbox) -> None:
    data = bytes(range(256)) * 4 + b"\x00\xff"
    prog = "import sys, hashlib\nd = sys.stdin.buffer.read()\nprint(len(d), hashlib.sha256(d).hexdigest())\n"
    import hashlib

    r = run1(sandbox, prog, stdin=data, expected=f"{len(data)} {hashlib.sha256(data).hexdigest()}")
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_large_stdin_unread_and_echoed_no_deadlock(sandbox: Sandbox) -> None:
    big = b"7 " * (400 << 10)
    r = run1(sandbox, "print('ok')\n", stdin=big, expected="ok")
    assert r.verdict is Verdict.PASSED
    r = run1(sandbox, "import sys\nsys.stdout.write(sys.stdin.read())\n", stdin=big, expected=big.decode())
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_os_write_bypass_is_captured(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import os\nos.write(1, b'hello\\n')\n", expected="hello")
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_invalid_utf8_output(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import os\nos.write(1, b'\\xff\\xfe')\n", expected="ok")
    assert r.verdict is Verdict.WRONG_ANSWER


@needs_bwrap
def test_huge_file_write_hits_fsize(sandbox: Sandbox) -> None:
    r = run1(sandbox, "with open('big.bin', 'wb') as f:\n    f.write(b'0' * (64 << 20))\n")
    assert r.verdict in (Verdict.RUNTIME_ERROR, Verdict.MEMORY)
    assert "File too large" in r.stderr or "MemoryError" in r.stderr


@needs_bwrap
def test_sleep_forever(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import time\ntime.sleep(10**6)\n", time_limit_s=1.0)
    assert r.verdict is Verdict.TIMEOUT


@needs_bwrap
def test_exception_and_exit_code(sandbox: Sandbox) -> None:
    assert run1(sandbox, "raise ValueError('boom')\n").verdict is Verdict.RUNTIME_ERROR
    r = run1(sandbox, "import sys\nprint('6')\nsys.exit(3)\n", expected="6")
    assert r.verdict is Verdict.RUNTIME_ERROR and r.exit_code == 3


@needs_bwrap
def test_killing_the_parent_fails_and_later_tests_run(sandbox: Sandbox) -> None:
    prog = "import os\nif input() == 'kill':\n    os.kill(os.getppid(), 9)\n    os.kill(1, 9)\nprint('alive')\n"
    result = sandbox.run(prog, [StdinTest("kill\n", "alive"), StdinTest("ok\n", "alive")])
    assert result.verdicts == [Verdict.RUNTIME_ERROR, Verdict.PASSED]
    assert_no_leftovers()


@needs_bwrap
def test_kill_minus_one_touches_nothing_outside(sandbox: Sandbox) -> None:
    r = run1(
        sandbox, "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\nprint('done')\n", expected="done"
    )
    assert r.verdict is Verdict.PASSED


@needs_bwrap
def test_unprivileged_uid(sandbox: Sandbox) -> None:
    r = run1(sandbox, "import os\nprint(os.getuid(), os.getgid(), os.getgroups())\n")
    uid, gid, groups = r.stdout.split(maxsplit=2)
    assert r.verdict is Verdict.PASSED and int(uid) in SANDBOX_UIDS and gid == uid and groups.strip() == "[]"


def test_fallback_without_bwrap_is_loud_and_still_kills() -> None:
    with pytest.warns(RuntimeWarning, match="SANDBOX FALLBACK"):
        sandbox = Sandbox(SandboxConfig(time_limit_s=1.0, use_bwrap=False))
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\n"
        "os.wait()\nprint('ok')\n"
    )
    result = sandbox.run(daemon, [StdinTest("", "ok")])
    assert result.bwrap is False and result.verdicts == [Verdict.PASSED]
    assert_no_leftovers()
    loop = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    result = sandbox.run(loop, [StdinTest()])
    assert result.verdicts == [Verdict.TIMEOUT]
    assert_no_leftovers()
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    assert sandbox.run(bomb, [StdinTest()]).verdicts == [Verdict.TIMEOUT]
    assert_no_leftovers()


# ---- attacks found in an audit (each with the verdict it must get) ----

ADD_TESTS = [
    FunctionalTest(
        "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(4, 5) == 9\ncheck(add)\n"
    )
]


@needs_bwrap
def test_functional_nonce_from_the_harness_frame_is_wrong_answer(sandbox: Sandbox) -> None:
    prog = (
        "import os, sys\ndef add(a, b):\n    return 0\n"
        "nonce = sys._getframe(1).f_locals.get('nonce', b'')\n"
        "sys.stdout.flush()\nos.write(1, b'\\n' + (nonce if isinstance(nonce, bytes) else b'') + b'\\n')\nos._exit(0)\n"
    )
    assert sandbox.run(prog, ADD_TESTS).verdicts == [Verdict.WRONG_ANSWER]
    assert_no_leftovers()


@needs_bwrap
def test_functional_nonce_from_proc_environ_is_wrong_answer(sandbox: Sandbox) -> None:
    prog = (
        "import os, sys\ndef add(a, b):\n    return 0\n"
        "for kv in open('/proc/self/environ', 'rb').read().split(b'\\0'):\n"
        "    if kv.startswith(b'RLA_NONCE='):\n"
        "        sys.stdout.flush(); os.write(1, b'\\n' + kv[10:] + b'\\n'); os._exit(0)\n"
        "os._exit(0)\n"
    )
    assert sandbox.run(prog, ADD_TESTS).verdicts == [Verdict.WRONG_ANSWER]


@needs_bwrap
def test_functional_always_equal_object_is_wrong_answer(sandbox: Sandbox) -> None:
    prog = (
        "class E:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def add(a, b):\n    return E()\n"
    )
    result = sandbox.run(prog, ADD_TESTS)
    assert result.verdicts == [Verdict.WRONG_ANSWER] and "AssertionError" in result.tests[0].detail


SHARED_CODING = Path(__file__).resolve().parents[2].parent / "shared" / "coding"
LOOKUP_OWN_INPUT = (
    "import glob, json, sys\nneedle = sys.stdin.read()\n"
    "for path in sorted(glob.glob({pattern!r})):\n"
    "    for line in open(path):\n"
    "        rec = json.loads(line)\n"
    "        for t in rec.get('tests') or []:\n"
    "            if t.get('input') == needle:\n"
    "                sys.stdout.write(t['output']); sys.exit(0)\n"
    "print('not found')\n"
)


@needs_bwrap
@pytest.mark.skipif(not (SHARED_CODING / "kickstart" / "problems.jsonl").is_file(), reason="../shared/coding absent")
def test_stdin_program_cannot_look_up_its_answer_in_the_shared_data(sandbox: Sandbox) -> None:
    from rlanything_core.envs.coding import CodingTask, load_kickstart

    prob = next(p for p in load_kickstart() if p.id == "kickstart/2013/practice_round/bad_horse")
    prog = LOOKUP_OWN_INPUT.format(pattern=str(SHARED_CODING.resolve()) + "/*/problems.jsonl")
    result = CodingTask(prob, Sandbox(SandboxConfig(time_limit_s=20.0, use_bwrap=True))).evaluate(prog)
    assert result.verdicts == [Verdict.WRONG_ANSWER] * len(prob.tests)
    assert all(t.stdout.strip() == "not found" for t in result.tests)


@needs_bwrap
def test_stdin_program_cannot_read_a_training_run_directory(sandbox: Sandbox, world_dir: Path) -> None:
    tasks = world_dir / "tasks.jsonl"
    tasks.write_text(json.dumps({"tests": [{"input": "3 4\n", "output": "7\n"}]}) + "\n")
    os.chmod(tasks, 0o644)
    prog = LOOKUP_OWN_INPUT.format(pattern=str(world_dir) + "/*.jsonl")
    assert run1(sandbox, prog, stdin="3 4\n", expected="7").verdict is Verdict.WRONG_ANSWER


@needs_bwrap
def test_fork_bomb_beside_a_normal_program_changes_nothing() -> None:
    sandbox = Sandbox(SandboxConfig(time_limit_s=3.0, memory_mb=512, max_processes=32, use_bwrap=True))
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    normal = (
        "import subprocess, sys, threading, time\n"
        "time.sleep(0.2)\n"
        "out = []\nths = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n"
        "[t.start() for t in ths]; [t.join() for t in ths]\n"
        "child = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout\n"
        "print(len(out), child.strip(), int(input()) * 2)\n"
    )
    tests = [StdinTest(f"{k}\n", f"8 42 {2 * k}") for k in range(4)]
    jobs = [(bomb, [StdinTest(time_limit_s=2.5)]), (normal, tests)]
    bomb_result, normal_result = sandbox.run_many(jobs, max_workers=2)
    assert bomb_result.verdicts == [Verdict.TIMEOUT]
    assert normal_result.verdicts == [Verdict.PASSED] * 4, [t.stderr[-300:] for t in normal_result.tests]
    assert_no_leftovers()


@needs_bwrap
def test_host_unix_sockets_are_unreachable(sandbox: Sandbox) -> None:
    paths, servers = [], []
    for directory in ("/var/tmp", "/run", "/dev/shm", "/tmp"):
        if not os.path.isdir(directory):
            continue
        path = os.path.join(directory, f"rla_hostile_{os.getpid()}.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        os.chmod(path, 0o777)
        server.listen(1)
        server.settimeout(0.1)
        paths.append(path)
        servers.append(server)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0rla_hostile_{os.getpid()}")
    abstract.listen(1)
    abstract.settimeout(0.1)
    servers.append(abstract)
    prog = (
        "import socket\nok = 0\n"
        f"for p in {paths + [chr(0) + f'rla_hostile_{os.getpid()}']!r}:\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    try:\n        s.connect(p); ok += 1\n    except OSError:\n        pass\n"
        "print(ok)\n"
    )
    try:
        assert run1(sandbox, prog, expected="0").verdict is Verdict.PASSED
        for server in servers:
            with pytest.raises(TimeoutError):
                server.accept()
    finally:
        for server in servers:
            server.close()
        for path in paths:
            os.unlink(path)


@needs_bwrap
def test_no_new_user_namespace(sandbox: Sandbox) -> None:
    prog = (
        "import ctypes, os, subprocess\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "direct = libc.unshare(0x10000000) == 0\n"
        "try:\n"
        "    tool = subprocess.run(['unshare', '-Ur', 'id', '-u'], capture_output=True, text=True).stdout.strip()\n"
        "except OSError:\n"
        "    tool = ''\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if libc.unshare(0x10000000) == 0 else 1)\n"
        "in_child = os.waitpid(pid, 0)[1] == 0\n"
        "print('userns' if direct or tool == '0' or in_child else 'blocked')\n"
    )
    assert run1(sandbox, prog, expected="blocked").verdict is Verdict.PASSED


@needs_bwrap
def test_full_private_disk_fails_only_that_test() -> None:
    sandbox = Sandbox(SandboxConfig(time_limit_s=5.0, tmpfs_mb=8, file_size_mb=2, use_bwrap=True))
    prog = (
        "import sys\n"
        "if input() == 'fill':\n"
        "    i = 0\n"
        "    while True:\n"
        "        with open(f'fill{i}', 'wb') as f:\n"
        "            f.write(b'0' * (1 << 20))\n"
        "        i += 1\n"
        "print('ok')\n"
    )
    tests = [StdinTest("fill\n", "ok"), StdinTest("x\n", "ok"), StdinTest("fill\n", "ok"), StdinTest("x\n", "ok")]
    result = sandbox.run(prog, tests)
    assert result.verdicts == [Verdict.RUNTIME_ERROR, Verdict.PASSED] * 2, [t.detail for t in result.tests]
    assert "No space left" in result.tests[0].stderr and not result.error


@pytest.mark.parametrize("bad", [math.inf, -math.inf, 1e12, math.nan, 0.0, -1.0, "4"])
def test_time_limits_are_validated(bad: object) -> None:
    with pytest.raises(ValueError, match="time_limit_s"):
        SandboxConfig(time_limit_s=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_limit_s"):
        StdinTest("", "x", time_limit_s=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_limit_s"):
        FunctionalTest("pass", time_limit_s=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["inf", "1e12", "nan", "0"])
def test_cli_refuses_bad_time_limits(bad: str, tmp_path: Path) -> None:
    prog = tmp_path / "p.py"
    prog.write_text("print(1)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(rlanything_core.__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "rlanything_core.sandbox", str(prog), "--time-limit", bad]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=60)
    assert proc.returncode == 2 and "time_limit_s" in proc.stderr and "Traceback" not in proc.stderr


def test_fallback_kill_minus_one_reaches_no_host_process() -> None:
    """Without bubblewrap (no pid namespace) a program's kill(-1) must not reach processes outside its sandbox."""
    with pytest.warns(RuntimeWarning, match="SANDBOX FALLBACK"):
        sandbox = Sandbox(SandboxConfig(time_limit_s=2.0, use_bwrap=False))
    victims = [
        subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[], start_new_session=True)
        for uid in (65534, os.getuid())
    ]
    try:
        prog = (
            "import os, signal\nfor _ in range(20):\n    try:\n        os.kill(-1, signal.SIGKILL)\n"
            "    except OSError:\n        pass\nprint('done')\n"
        )
        assert sandbox.run(prog, [StdinTest("", "done")]).verdicts == [Verdict.PASSED]
        time.sleep(0.2)
        assert [v.poll() for v in victims] == [None, None]
    finally:
        for v in victims:
            v.kill()
            v.wait()
    assert_no_leftovers()


def test_fallback_neighbours_cannot_kill_each_other() -> None:
    with pytest.warns(RuntimeWarning, match="SANDBOX FALLBACK"):
        sandbox = Sandbox(SandboxConfig(time_limit_s=4.0, use_bwrap=False))
    killer = (
        "import os, time\nend = time.time() + 2\nwhile time.time() < end:\n    try:\n        os.kill(-1, 9)\n"
        "    except OSError:\n        pass\n"
    )
    normal = "import time\nfor _ in range(10):\n    time.sleep(0.1)\nprint(int(input()) + 1)\n"
    results = sandbox.run_many([(killer, [StdinTest()]), (normal, [StdinTest("1\n", "2"), StdinTest("5\n", "6")])])
    assert results[1].verdicts == [Verdict.PASSED, Verdict.PASSED]
    assert_no_leftovers()


@needs_bwrap
def test_binds_make_one_socket_reachable_and_nothing_else() -> None:
    """The documented way to let a sandboxed tool reach one host socket (an X display, for example)."""
    d = Path(tempfile.mkdtemp(prefix="rla_bind_", dir="/tmp"))
    os.chmod(d, 0o755)
    allowed, other = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    try:
        for s, name in ((allowed, "X99"), (other, "X98")):
            s.bind(str(d / name))
            os.chmod(d / name, 0o777)
            s.listen(1)
        sandbox = Sandbox(SandboxConfig(time_limit_s=3.0, binds=(str(d / "X99"),), use_bwrap=True))
        prog = (
            "import os, socket\nout = []\n"
            f"for p in ({str(d / 'X99')!r}, {str(d / 'X98')!r}):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n        s.connect(p); out.append('yes')\n    except OSError:\n        out.append('no')\n"
            f"print(*out, os.path.exists({str(d / 'X98')!r}))\n"
        )
        assert run1(sandbox, prog, expected="yes no False").verdict is Verdict.PASSED
    finally:
        allowed.close()
        other.close()
        shutil.rmtree(d)


@needs_bwrap
def test_bwrap_command_runs_a_tool_unprivileged_with_one_bind(tmp_path: Path) -> None:
    """The builder as another tool (the desktop helper) would use it: an unprivileged uid, one visible file."""
    from rlanything_core.sandbox import bwrap_command

    d = Path(tempfile.mkdtemp(prefix="rla_tool_", dir="/tmp"))
    os.chmod(d, 0o755)
    (d / "visible.txt").write_text("seen")
    (d / "hidden.txt").write_text("secret")
    os.chmod(d / "visible.txt", 0o644)
    os.chmod(d / "hidden.txt", 0o644)
    try:
        cmd = bwrap_command(tmpfs_mb=8, binds=(str(d / "visible.txt"),), as_root=False) + [
            "/usr/bin/python3",
            "-I",
            "-c",
            f"import os\nprint(os.getuid(), open({str(d / 'visible.txt')!r}).read(), "
            f"os.path.exists({str(d / 'hidden.txt')!r}), os.path.exists('/work'))",
        ]
        kw = {"user": 65534, "group": 65534, "extra_groups": []}
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
        assert proc.stdout.split() == ["65534", "seen", "False", "False"], proc.stderr
    finally:
        shutil.rmtree(d)


def test_fallback_runs_programs_under_a_private_tmpdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A 0700 TMPDIR (as `make unit` once set) must not deny the programs' uids their files: the fallback avoids it."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with pytest.warns(RuntimeWarning, match="SANDBOX FALLBACK"):
        sandbox = Sandbox(SandboxConfig(time_limit_s=2.0, use_bwrap=False))
    assert sandbox_module.fallback_work_root() != str(private)
    assert sandbox.run("print(int(input()) * 2)", [StdinTest("21\n", "42")]).verdicts == [Verdict.PASSED]
    assert list(private.iterdir()) == []
    assert_no_leftovers()


def test_fallback_without_a_reachable_tmp_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "_others_can_traverse", lambda path: False)
    with pytest.raises(RuntimeError, match="can be traversed by other users"):
        Sandbox(SandboxConfig(use_bwrap=False))


def test_fallback_neighbours_cannot_read_each_others_files() -> None:
    """A policy's program looks for a neighbour's files in the fallback's shared temporary root and reads them."""
    with pytest.warns(RuntimeWarning, match="SANDBOX FALLBACK"):
        sandbox = Sandbox(SandboxConfig(time_limit_s=4.0, use_bwrap=False))
    root = sandbox_module.fallback_work_root()
    owner = "import time\nopen('secret.txt', 'w').write('gold')\ntime.sleep(2)\nprint('kept')\n"
    thief = (
        "import glob, os, time\ntime.sleep(0.5)\nmine = os.getcwd()\nseen, read = 0, []\n"
        f"for d in glob.glob({root!r} + '/rla_sandbox_*'):\n"
        "    if os.path.realpath(mine).startswith(os.path.realpath(d) + os.sep):\n        continue\n    seen += 1\n"
        "    for t in [d, os.path.join(d, 't0')]:\n"
        "        try:\n            read += [open(os.path.join(t, n)).read() for n in os.listdir(t)]\n"
        "        except OSError:\n            pass\n"
        "        try:\n            read.append(open(os.path.join(t, 'secret.txt')).read())\n"
        "        except OSError:\n            pass\n"
        "print('seen' if seen else 'none', 'LEAK' if read else 'blocked')\n"
    )
    results = sandbox.run_many([(owner, [StdinTest("", "kept")]), (thief, [StdinTest("", "seen blocked")])])
    assert results[0].verdicts == [Verdict.PASSED]
    # "none blocked" would mean the neighbour's folder was not even found: the attempt then proves nothing
    assert results[1].verdicts == [Verdict.PASSED], results[1]
    assert_no_leftovers()
