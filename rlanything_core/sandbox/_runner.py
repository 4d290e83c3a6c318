"""In-sandbox test runner: one process per program that runs every test of that program.

Executed as ``python -I -c <this file's text>`` inside the sandbox (bubblewrap, or the loudly reported fallback);
stdlib only. Protocol: the host writes one JSON object on stdin::

    {"program": str, "workdir": str, "python": str, "uid": int | null, "harness_uid": int | null,
     "limits": {"memory_bytes": int, "file_size_bytes": int, "nproc": int, "nofile": int},
     "output_limit": int, "stderr_limit": int, "program_src": str, "harness_src": str,
     "tests": [{"kind": "stdin" | "functional", "stdin_b64": str, "code": str, "setup": str,
                "program_names": [str], "values_b64": str, "time_limit_s": float}]}

and reads one JSON object from stdout: ``{"tests": [{"status", "exit_code", "stdout_b64", "stderr_b64", "wall_s",
"error", "report"}], "seccomp": bool}`` with ``status`` in ``exited | timeout | output_limit | spawn_error``;
``report`` is the functional harness's report (``<outcome>\n<detail>``) or null; ``values_b64`` is the wire
encoding (``_wire.py``) of a functional test's plain-data values, or empty. Expected stdin outputs never enter
the sandbox, and functional test code reaches only the harness, never the program's process.

Every program runs in a fresh interpreter in its own session, as an unprivileged uid of this sandbox's slot when the
runner is root, with rlimits (CPU seconds, address space, processes, file size, open files, no core files),
``no_new_privs`` and a seccomp filter that refuses new user namespaces. A functional test's harness is forked from
this runner (no interpreter start-up) and dropped to the slot's other uid under the same limits. After each test its
process groups are SIGKILLed and a helper running as each test uid sends ``kill(-1, SIGKILL)``: that reaches daemons
and double-forked children, and nothing else, since the slot's uids are this sandbox's alone. Then the test's private
directory is deleted, so a test that fills the disk costs only itself.
"""

from __future__ import annotations

import base64
import json
import math
import os
import selectors
import shutil
import subprocess
import sys
import time

TYPE_CHECKING = False  # typing costs start-up time; mypy treats this name as True
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

try:  # for linters and unit tests; inside the sandbox _procs.py is concatenated in front of this file
    from rlanything_core.sandbox._procs import (
        _Forked,
        _kill_all_as,
        _kill_group,
        _reap_orphans,
        _Seccomp,
        child_setup,
        spawn_isolated,
    )
except ImportError:  # pragma: no cover
    pass


def _spawn(
    spec: dict[str, Any],
    argv: list[str],
    uid: int | None,
    cwd: str,
    time_limit: float,
    seccomp: _Seccomp,
    pass_fds: tuple[int, ...] = (),
    stdin: int = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """Start one test's program: as ``uid`` when the runner is root, under the test's rlimits and seccomp."""
    drop = uid is not None and os.getuid() == 0
    limits = spec["limits"]
    return spawn_isolated(
        argv,
        cwd=cwd,
        extra_env={"HOME": cwd, "TMPDIR": cwd},
        stdin=stdin,
        pass_fds=pass_fds,
        uid=uid if drop else None,
        preexec_fn=lambda: child_setup(limits, max(1, math.ceil(time_limit)), seccomp, limits["nproc"]),
    )


def _register(
    sel: selectors.BaseSelector, readers: dict[Any, tuple[bytearray, int, bool]], writers: dict[Any, bytes]
) -> dict[Any, memoryview]:
    """Make every stream non-blocking and watch it; return what is left to write per stdin (empty ones are closed)."""
    stream: Any
    for stream in readers:
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    views: dict[Any, memoryview] = {}
    for stream, data in writers.items():
        if data:
            os.set_blocking(stream.fileno(), False)
            sel.register(stream, selectors.EVENT_WRITE)
            views[stream] = memoryview(data)
        else:
            stream.close()
    return views


def _feed(sel: selectors.BaseSelector, stream: Any, views: dict[Any, memoryview]) -> None:
    """Write the next chunk of ``stream``'s input; close it once all is written or the reader has gone."""
    try:
        n = os.write(stream.fileno(), views[stream][:65536])
        views[stream] = views[stream][n:]
    except (BrokenPipeError, OSError):
        views[stream] = views[stream][:0]
    if not views[stream]:
        sel.unregister(stream)
        stream.close()


def _drain(
    sel: selectors.BaseSelector, stream: Any, readers: dict[Any, tuple[bytearray, int, bool]], out_limit: int
) -> bool:
    """Read the next chunk of ``stream`` into its buffer; return whether the program's output overflowed.

    An output stream keeps ``out_limit`` bytes and overflows past them; any other keeps its own limit, silently.
    """
    try:
        chunk = os.read(stream.fileno(), 65536)
    except BlockingIOError:
        return False
    if not chunk:
        sel.unregister(stream)
        return False
    buf, limit, is_output = readers[stream]
    if is_output:
        buf += chunk
        if len(buf) > out_limit:
            del buf[out_limit:]
            return True
    elif len(buf) < limit:
        buf += chunk[: limit - len(buf)]
    return False


def _supervise(
    main: Any,
    readers: dict[Any, tuple[bytearray, int, bool]],
    writers: dict[Any, bytes],
    deadline: float,
    out_limit: int,
) -> str:
    """Pump the pipes until ``main`` has exited and its streams are drained, the deadline passes or stdout overflows.

    Args:
        main: the process whose end ends the test.
        readers: ``{stream: (buffer, limit, counts_as_output)}``.
        writers: ``{stream: bytes}`` to feed (non-blocking).
        deadline: monotonic time of the wall-clock limit.
        out_limit: stdout cap of a ``counts_as_output`` stream.

    Returns:
        ``exited``, ``timeout`` or ``output_limit``.
    """
    sel = selectors.DefaultSelector()
    views = _register(sel, readers, writers)
    status, exited_at = "exited", None
    while sel.get_map() and status == "exited":
        now = time.monotonic()
        if now >= deadline:
            status = "timeout"
            break
        if exited_at is None and main.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.1:  # leftover children hold the pipes open
            break
        for key, _ in sel.select(timeout=min(deadline - now, 0.05)):
            if key.fileobj in views:
                _feed(sel, key.fileobj, views)
            elif _drain(sel, key.fileobj, readers, out_limit):
                status = "output_limit"
    if status == "exited" and exited_at is None:  # pipes closed but the process may still be running
        try:
            main.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = "timeout"
    sel.close()
    return status


_HARNESS: dict[str, Any] = {"__name__": "__rla_harness__"}


def _fork_harness(
    spec: dict[str, Any], test: dict[str, Any], channel: tuple[int, int], outputs: tuple[int, int], seccomp: _Seccomp
) -> _Forked:
    """Fork the harness from this runner and drop it to the harness uid.

    No new interpreter has to start (the runner's is ready). The program never holds any of the harness's
    descriptors; ``outputs`` are the report and stderr pipes.
    """
    uid = spec["harness_uid"] if spec["uid"] is not None and os.getuid() == 0 else None
    keep = {*channel, outputs[0], 1, 2}
    pid = os.fork()
    if pid:
        return _Forked(pid)
    try:  # pragma: no cover - child
        os.setsid()
        os.dup2(outputs[1], 1)
        os.dup2(outputs[1], 2)
        for name in os.listdir("/proc/self/fd"):
            if int(name) not in keep:
                try:
                    os.close(int(name))
                except OSError:
                    pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)  # a credential change also makes the process non-dumpable
        else:
            _HARNESS["_not_dumpable"]()
        os.chdir(spec["workdir"])
        child_setup(spec["limits"], max(1, math.ceil(float(test["time_limit_s"]))), seccomp, spec["limits"]["nproc"])
        values = (
            _HARNESS["loads"](base64.b64decode(test["values_b64"]), *[_HARNESS["_refuse"]] * 3)
            if test["values_b64"]
            else {}
        )
        hspec = {
            "setup": test["setup"],
            "code": test["code"],
            "program_names": list(test["program_names"]),
            "values": values,
        }

        def report(outcome: str, detail: str) -> None:
            os.write(outputs[0], f"{outcome}\n{detail}".encode("utf-8", "replace"))
            os._exit(0)

        _HARNESS["run_harness"](channel[0], channel[1], hspec, report)
    finally:
        os._exit(1)


def _spawn_error(error: str) -> dict[str, Any]:
    """The record of a test whose processes could not be started."""
    return {
        "status": "spawn_error",
        "exit_code": None,
        "stdout_b64": "",
        "stderr_b64": "",
        "wall_s": 0.0,
        "error": error,
        "report": None,
    }


def _make_workdir(spec: dict[str, Any], index: int) -> str:
    """The test's private directory, owned by the program uid (or open to all when no uid is dropped)."""
    workdir = os.path.join(spec["workdir"], f"t{index}")
    os.mkdir(workdir, 0o700)
    if spec["uid"] is not None and os.getuid() == 0:
        os.chown(workdir, spec["uid"], spec["uid"])
    else:
        os.chmod(workdir, 0o777)
    return workdir


def _start_functional(
    spec: dict[str, Any],
    test: dict[str, Any],
    cmd: tuple[str, str, _Seccomp],
    procs: list[Any],
    extra: list[Any],
    buffers: tuple[bytearray, bytearray, bytearray],
) -> tuple[Any, dict[Any, tuple[bytearray, int, bool]], dict[Any, bytes]]:
    """Start the program with its end of the channel and fork the harness with the other; the harness ends the test.

    Args:
        spec: the run's spec (see the module docstring).
        test: this test's entry of ``spec["tests"]``.
        cmd: ``(prog_path, workdir, seccomp)``.
        procs: receives each process as soon as it runs (so that a later failure still kills it).
        extra: receives the harness's report and stderr pipes (closed after the test).
        buffers: ``(stdout, stderr, report)`` to fill.

    Returns:
        ``(main, readers, writers)`` for :func:`_supervise`.
    """
    prog_path, workdir, seccomp = cmd
    out, err, report = buffers
    fds = [*os.pipe(), *os.pipe(), *os.pipe(), *os.pipe()]  # request, reply, report, harness stderr
    req_r, req_w, rep_r, rep_w, report_r, report_w, herr_r, herr_w = fds
    try:
        argv = [spec["python"], "-I", "-c", spec["program_src"], prog_path, str(req_r), str(rep_w)]
        time_limit = float(test["time_limit_s"])
        prog = _spawn(spec, argv, spec["uid"], workdir, time_limit, seccomp, (req_r, rep_w), subprocess.DEVNULL)
        procs.append(prog)
        harness = _fork_harness(spec, test, (req_w, rep_r), (report_w, herr_w), seccomp)
        procs.append(harness)
    finally:
        for fd in (req_r, req_w, rep_r, rep_w, report_w, herr_w):
            os.close(fd)
    harness_report, harness_err = open(report_r, "rb", buffering=0), open(herr_r, "rb", buffering=0)
    extra += [harness_report, harness_err]
    readers = {
        prog.stdout: (out, 0, True),
        prog.stderr: (err, int(spec["stderr_limit"]), False),
        harness_report: (report, 1 << 20, False),
        harness_err: (bytearray(), 1 << 16, False),
    }
    return harness, readers, {}


def _start_stdin(
    spec: dict[str, Any],
    test: dict[str, Any],
    cmd: tuple[str, str, _Seccomp],
    procs: list[Any],
    buffers: tuple[bytearray, bytearray],
) -> tuple[Any, dict[Any, tuple[bytearray, int, bool]], dict[Any, bytes]]:
    """Start the program alone, to be fed the test's stdin; see :func:`_start_functional` for the arguments."""
    prog_path, workdir, seccomp = cmd
    out, err = buffers
    time_limit = float(test["time_limit_s"])
    prog = _spawn(spec, [spec["python"], "-I", prog_path], spec["uid"], workdir, time_limit, seccomp)
    procs.append(prog)
    readers = {prog.stdout: (out, 0, True), prog.stderr: (err, int(spec["stderr_limit"]), False)}
    return prog, readers, {prog.stdin: base64.b64decode(test["stdin_b64"])}


def _end_test(spec: dict[str, Any], test: dict[str, Any], procs: list[Any], extra: list[Any]) -> list[int]:
    """Kill the test's process groups, close its pipes, reap it and kill whatever its uids left running.

    Returns:
        The exit codes of ``procs``, in order.
    """
    for p in procs:
        _kill_group(p.pid)
    for p in procs:
        for stream in (p.stdin, p.stdout, p.stderr, *extra):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
    codes = [p.wait() for p in procs]
    if spec["uid"] is not None and os.getuid() == 0:
        uids = {spec["uid"], spec["harness_uid"]} if test["kind"] == "functional" else {spec["uid"]}
        for u in uids:
            _kill_all_as(u)
    _reap_orphans()
    return codes


def _run_one(
    spec: dict[str, Any], test: dict[str, Any], index: int, prog_path: str, seccomp: _Seccomp
) -> dict[str, Any]:
    """Run one test in its own directory, under its wall-clock limit; return its record for the host."""
    cmd = (prog_path, _make_workdir(spec, index), seccomp)
    out, err, report = bytearray(), bytearray(), bytearray()
    start = time.monotonic()
    procs: list[Any] = []  # Popen or _Forked; the program first, whose exit code is the test's
    extra: list[Any] = []
    try:
        if test["kind"] == "functional":
            main, readers, writers = _start_functional(spec, test, cmd, procs, extra, (out, err, report))
        else:
            main, readers, writers = _start_stdin(spec, test, cmd, procs, (out, err))
    except OSError as exc:
        for p in procs:
            _kill_group(p.pid)
            p.wait()
        return _spawn_error(f"{type(exc).__name__}: {exc}")
    deadline = start + float(test["time_limit_s"])
    status = _supervise(main, readers, writers, deadline, int(spec["output_limit"]))
    wall = time.monotonic() - start
    codes = _end_test(spec, test, procs, extra)
    return {
        "status": status,
        "exit_code": codes[0],
        "stdout_b64": base64.b64encode(bytes(out)).decode("ascii"),
        "stderr_b64": base64.b64encode(bytes(err)).decode("ascii"),
        "wall_s": wall,
        "error": "",
        "report": bytes(report).decode("utf-8", "replace") if test["kind"] == "functional" else None,
    }


def main() -> int:
    """Read the spec from stdin, run every test, write the results to stdout."""
    spec = json.loads(sys.stdin.buffer.read())
    if any(t["kind"] == "functional" for t in spec["tests"]):  # compiled once, run in each forked harness
        exec(compile(spec["harness_src"], "<harness>", "exec"), _HARNESS)
    base = spec["workdir"]
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o711)  # tests cannot create files next to their own directory, only inside it
    prog_path = os.path.join(base, "prog.py")
    with open(prog_path, "w", encoding="utf-8") as f:  # written before any test can fill the disk
        f.write(spec["program"])
    os.chmod(prog_path, 0o444)
    seccomp = _Seccomp()
    results: list[dict[str, Any]] = []
    for i, test in enumerate(spec["tests"]):
        try:
            results.append(_run_one(spec, test, i, prog_path, seccomp))
        except Exception as exc:  # noqa: BLE001 - one test's failure must not lose the others' results
            results.append(_spawn_error(f"runner: {type(exc).__name__}: {exc}"))
        finally:
            shutil.rmtree(os.path.join(base, f"t{i}"), ignore_errors=True)
    sys.stdout.write(json.dumps({"tests": results, "seccomp": seccomp.ok}))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
