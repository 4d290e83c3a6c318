"""In-sandbox test runner: one process per program that runs every test of that program.

This file is executed as a script (``python -I -S _runner.py``) inside the sandbox (bubblewrap, or the loudly
reported fallback); the host never imports it for execution. It only uses the standard library.

Protocol: the host writes one JSON object on stdin::

    {"program": str, "workdir": str, "python": str, "uid": int | null, "gid": int | null,
     "limits": {"memory_bytes": int, "file_size_bytes": int, "nproc": int, "nofile": int},
     "output_limit": int, "stderr_limit": int, "nonce": str, "marker": str, "kill_all_as_uid": bool,
     "tests": [{"kind": "stdin" | "functional", "stdin_b64": str, "code": str, "time_limit_s": float}]}

and reads one JSON object from stdout: ``{"tests": [{"status", "exit_code", "stdout_b64", "stderr_b64",
"wall_s", "error"}]}`` with ``status`` in ``exited | timeout | output_limit | spawn_error``. Expected outputs never
enter the sandbox: the host compares outputs, so a program cannot read the answers from the runner's memory.

Each test runs in a fresh interpreter (``python -I``) in its own session (process group), as the unprivileged uid when
the runner is root, with rlimits (CPU seconds, address space, processes, file size, open files, no core files). After
each test the whole group is SIGKILLed; with ``kill_all_as_uid`` (inside a private pid namespace, where only this
sandbox's processes are visible) a helper running as the sandbox uid also sends ``kill(-1, SIGKILL)``, which reaches
setsid daemons and double-forked children. Without a pid namespace the runner sweeps processes whose environment
carries this run's marker.
"""

import base64
import json
import math
import os
import resource
import selectors
import signal
import subprocess
import sys
import time

__all__ = ["main"]

_BOOT = (
    "def _rla_boot():\n"
    "    import os, sys\n"
    "    nonce = os.environ.pop('RLA_NONCE', '').encode()\n"
    "    path = sys.argv[1]\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        src = f.read()\n"
    "    sys.argv = [path]\n"
    "    g = {'__name__': '__main__', '__file__': path, '__builtins__': __builtins__}\n"
    "    exec(compile(src, path, 'exec'), g)\n"
    "    sys.stdout.flush()\n"
    "    os.write(1, b'\\n' + nonce + b'\\n')\n"
    "_rla_boot()\n"
)


def _child_setup(limits: dict, cpu_s: int) -> None:  # runs in the forked child, after the uid drop
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"], limits["file_size_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all_as(uid: int, gid: int) -> None:
    """Fork a helper that becomes ``uid`` and sends SIGKILL to every process it may signal (not itself)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            for _ in range(3):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _sweep_marker(marker: str) -> None:
    """Kill every process whose environment contains ``marker`` (fallback without a pid namespace)."""
    needle = marker.encode()
    me = os.getpid()
    for _ in range(5):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle in f.read():
                        os.kill(int(name), signal.SIGKILL)
                        found = True
            except OSError:
                continue
        if not found:
            return
        time.sleep(0.01)


def _reap_orphans() -> None:
    """Reap zombies re-parented to us (we may be pid 1 of the namespace's tree or a subreaper)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _run_one(spec: dict, test: dict, index: int) -> dict:
    workdir = os.path.join(spec["workdir"], f"t{index}")
    os.mkdir(workdir)
    os.chmod(workdir, 0o777)
    if test["kind"] == "functional":
        path = os.path.join(workdir, "prog.py")
        text = spec["program"] + "\n\n" + test["code"] + "\n"
        argv = [spec["python"], "-I", "-c", _BOOT, path]
    else:
        path = os.path.join(workdir, "prog.py")
        text = spec["program"]
        argv = [spec["python"], "-I", path]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o444)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "RLA_SANDBOX_MARKER": spec["marker"],
    }
    if test["kind"] == "functional":
        env["RLA_NONCE"] = spec["nonce"]
    time_limit = float(test["time_limit_s"])
    stdin_data = base64.b64decode(test["stdin_b64"])
    uid, gid = spec["uid"], spec["gid"]
    drop = uid is not None and os.getuid() == 0
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            close_fds=True,
            start_new_session=True,
            user=uid if drop else None,
            group=gid if drop else None,
            extra_groups=[] if drop else None,
            preexec_fn=lambda: _child_setup(spec["limits"], max(1, math.ceil(time_limit))),
        )
    except OSError as exc:
        return {
            "status": "spawn_error",
            "exit_code": None,
            "stdout_b64": "",
            "stderr_b64": "",
            "wall_s": 0.0,
            "error": f"{type(exc).__name__}: {exc}",
        }
    status = "exited"
    out = bytearray()
    err = bytearray()
    out_limit, err_limit = int(spec["output_limit"]), int(spec["stderr_limit"])
    sel = selectors.DefaultSelector()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    for stream in (proc.stdout, proc.stderr):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    stdin_view = memoryview(stdin_data)
    if stdin_data:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    deadline = start + time_limit
    exited_at = None
    while sel.get_map():
        now = time.monotonic()
        if now >= deadline:
            status = "timeout"
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.1:  # leftover children hold the pipes open
            break
        for key, _ in sel.select(timeout=min(deadline - now, 0.05)):
            stream = key.fileobj  # type: ignore[assignment]
            if stream is proc.stdin:
                try:
                    n = os.write(proc.stdin.fileno(), stdin_view[:65536])
                    stdin_view = stdin_view[n:]
                except (BrokenPipeError, OSError):
                    stdin_view = stdin_view[:0]
                if not stdin_view:
                    sel.unregister(proc.stdin)
                    proc.stdin.close()
                continue
            try:
                chunk = os.read(stream.fileno(), 65536)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            if not chunk:
                sel.unregister(stream)
                continue
            if stream is proc.stdout:
                out += chunk
                if len(out) > out_limit:
                    del out[out_limit:]
                    status = "output_limit"
            elif len(err) < err_limit:
                err += chunk[: err_limit - len(err)]
        if status == "output_limit":
            break
    if status == "exited" and exited_at is None:  # pipes closed but the process may still be running
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = "timeout"
    wall = time.monotonic() - start
    _kill_group(proc.pid)
    for key in list(sel.get_map().values()):
        sel.unregister(key.fileobj)
    sel.close()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    code = proc.wait()
    if spec["kill_all_as_uid"] and drop:
        _kill_all_as(uid, gid)
    elif not drop:
        pass  # same uid as the runner: only the process group can be killed safely
    else:
        _sweep_marker(spec["marker"])
    _reap_orphans()
    return {
        "status": status,
        "exit_code": code,
        "stdout_b64": base64.b64encode(bytes(out)).decode("ascii"),
        "stderr_b64": base64.b64encode(bytes(err)).decode("ascii"),
        "wall_s": wall,
        "error": "",
    }


def main() -> int:
    """Read the spec from stdin, run every test, write the results to stdout."""
    spec = json.loads(sys.stdin.buffer.read())
    os.makedirs(spec["workdir"], exist_ok=True)
    os.chmod(spec["workdir"], 0o711)
    results = [_run_one(spec, test, i) for i, test in enumerate(spec["tests"])]
    sys.stdout.write(json.dumps({"tests": results}))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
