"""Harness side of a functional test (stdlib only; runs in the sandbox under its own uid, apart from the program).

The runner compiles ``_wire.py`` + this file once and calls ``run_harness`` in a child it forks for each test
(``main`` runs the same as a script: ``python -I -S -c <source> REQUEST_FD REPLY_FD DUMPABLE`` with ``{"setup",
"code", "program_names"}`` in the wire format on stdin). The harness executes the trusted ``setup`` (for example
LeetCode's ``ListNode`` helpers), binds the program's top-level names as remote proxies (only names that neither the
setup nor the builtins define, plus ``program_names``, which always come from the program), executes the test
``code`` and writes one report, ``<outcome>\n<detail>`` with ``outcome`` in ``passed | failed | error | program_gone |
protocol``, on the file descriptor that was its stdout. The program never holds that descriptor, never sees the test
code (it comes on stdin, not in argv) and cannot signal or trace this process (another uid, or not dumpable): the
verdict is this process's alone.

Values returned by the program are rebuilt here from plain data (``_wire.py``); anything else stays a ``Remote``
handle that equals only itself and has no truth value, so an "always equal" object is simply a wrong answer.
"""

from __future__ import annotations  # stripped when concatenated after _wire.py, which has it

import builtins
import importlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

try:  # for linters and unit tests; inside the sandbox the wire source is concatenated in front of this file
    from rlanything_core.sandbox._wire import ProtocolError, dumps, loads, read_frame, write_frame
except ImportError:  # pragma: no cover
    pass

__all__ = ["ProgramError", "ProgramGone", "run_harness"]

_NS_NAME = "__rla_tests__"


class ProgramGone(BaseException):  # noqa: N818 - not an Exception: test code's `except Exception` must not swallow it
    """The program exited, closed its channel or broke the protocol: no later check can pass."""


class ProgramError(Exception):
    """An exception raised by the program whose type is not a builtin exception."""


def _not_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: no ptrace and no /proc/<pid>/mem for a same-uid process (defence in depth)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: S110 - best effort; the distinct uid already protects this process
        pass


def run_harness(  # noqa: C901 - one closure-sharing procedure
    request_fd: int, reply_fd: int, spec: dict[str, Any], report: Callable[[str, str], NoReturn]
) -> NoReturn:
    """Run the tests of ``spec`` against the program behind the two pipes; ``report(outcome, detail)`` ends it."""
    # Stays one function: Remote, rpc and the decoder hooks are closures over this run's namespace, channel and
    # failure record, and the whole runs forked inside the sandbox with only the standard library.
    gone: list[tuple[str, str]] = []
    ns: dict[str, Any] = {"__name__": _NS_NAME, "__builtins__": builtins}
    try:
        exec(compile(spec["setup"], "<setup>", "exec"), ns)
    except BaseException as exc:  # noqa: BLE001
        report("error", f"test setup failed: {type(exc).__name__}: {exc}")
    data_classes = sorted(k for k, v in ns.items() if isinstance(v, type) and v.__module__ == _NS_NAME)
    remotes: dict[int, Any] = {}

    class Remote:
        """A value that stays in the program's process: callable, attributes readable, equal only to itself."""

        __slots__ = ("_rla_id",)

        def __init__(self, i: int) -> None:
            object.__setattr__(self, "_rla_id", i)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return rpc({"op": "call", "ref": self._rla_id, "args": list(args), "kwargs": kwargs})

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return rpc({"op": "getattr", "ref": self._rla_id, "name": name})

        def __setattr__(self, name: str, value: Any) -> None:
            raise TypeError("attributes of the program's objects cannot be set from the tests")

        def __eq__(self, other: object) -> bool:
            return self is other

        def __ne__(self, other: object) -> bool:
            return self is not other

        def __hash__(self) -> int:
            return id(self)

        def __bool__(self) -> bool:
            raise TypeError("a value of the program's own type has no truth value in the tests; return plain data")

        def __repr__(self) -> str:
            return f"<program object #{self._rla_id}>"

    def _handle_of(value: Any) -> int:
        if type(value) is Remote:
            return int(value._rla_id)
        raise TypeError(f"a {type(value).__name__} cannot be passed to the program (plain data only)")

    def handle(i: int) -> Any:
        if i not in remotes:
            remotes[i] = Remote(i)
        return remotes[i]

    def make_object(name: str) -> Any:
        cls = ns.get(name)
        if name not in data_classes or not isinstance(cls, type) or cls.__module__ != _NS_NAME:
            raise ProtocolError(f"{name!r} is not a data class of the tests")
        return object.__new__(cls)

    def module(name: str) -> Any:
        if name.startswith("_"):  # __main__ would be this harness itself
            return None
        try:
            return importlib.import_module(name)  # the harness's own copy: the program's monkeypatches stay there
        except ImportError:
            return None

    def receive() -> Any:
        return loads(read_frame(reply_fd), make_object, handle, module)

    def fail(outcome: str, detail: str) -> NoReturn:
        gone.append((outcome, detail))
        raise ProgramGone(detail)

    def exchange(msg: dict[str, Any]) -> dict[str, Any]:
        if gone:
            raise ProgramGone(gone[0][1])
        payload = dumps(msg, data_classes, _handle_of)  # a TypeError here is the test code's own error
        try:
            write_frame(request_fd, payload)
            reply = receive()
        except (EOFError, OSError):
            fail("program_gone", "the program exited or closed its channel before the tests ended")
        except ProtocolError as exc:
            fail("protocol", f"the program broke the harness protocol: {exc}")
        if type(reply) is not dict:
            fail("protocol", "the program broke the harness protocol: reply is not an object")
        return reply

    def rpc(msg: dict[str, Any]) -> Any:
        reply = exchange(msg)
        if "exc" in reply:
            exc = reply["exc"]
            if type(exc) is not list or len(exc) != 2 or not all(type(x) is str for x in exc):
                fail("protocol", "the program broke the harness protocol: bad exception record")
            cls = getattr(builtins, exc[0], None)
            if isinstance(cls, type) and issubclass(cls, Exception) and cls is not ProgramError:
                raise cls(exc[1])
            raise ProgramError(f"{exc[0]}: {exc[1]}")
        if "ok" not in reply:
            fail("protocol", "the program broke the harness protocol: a reply needs 'ok' or 'exc'")
        return reply["ok"]

    try:
        write_frame(request_fd, dumps({"op": "hello", "data_classes": data_classes}, (), _handle_of))
        names_msg = receive()
        if type(names_msg) is not dict or type(names_msg.get("names")) is not dict:
            raise ProtocolError("bad names message")
        names = {str(k): v for k, v in names_msg["names"].items()}
    except (EOFError, OSError):
        report("program_gone", "the program exited before the tests ran")
    except ProtocolError as exc:
        report("protocol", f"the program broke the harness protocol: {exc}")
    program_names = set(spec.get("program_names", ()))
    for name in program_names:
        ns.pop(name, None)
    for name, value in names.items():
        if name.startswith("__") or hasattr(builtins, name):
            continue  # the program cannot replace a builtin the tests use (abs, len, sorted, ...)
        if name in ns and name not in program_names:
            continue  # the trusted setup's definition wins (ListNode, is_same_tree, ...)
        ns[name] = value
    for name, value in spec.get("values", {}).items():  # test data (plain values, decoded strictly), never code
        ns[name] = value
    try:
        exec(compile(spec["code"], "<tests>", "exec"), ns)
    except ProgramGone:
        pass
    except AssertionError as exc:
        if not gone:
            report("failed", f"AssertionError: {exc}"[:2000])
    except BaseException as exc:  # noqa: BLE001
        if not gone:
            report("error", f"{type(exc).__name__}: {exc}"[:2000])
    if gone:
        report(*gone[0])
    report("passed", "")


def _refuse(value: object) -> NoReturn:
    raise ProtocolError(f"the harness spec holds plain data only, got {value!r}")


def main() -> None:
    """Entry point inside the sandbox."""
    request_fd, reply_fd = int(sys.argv[1]), int(sys.argv[2])
    report_fd = os.dup(1)
    os.dup2(2, 1)  # whatever the test code prints goes to stderr, never onto the report channel
    if sys.argv[3] == "0":  # same uid as the program (no root to drop to two uids): at least refuse ptrace
        _not_dumpable()
    spec = loads(sys.stdin.buffer.read(), _refuse, _refuse, _refuse)

    def report(outcome: str, detail: str) -> NoReturn:
        os.write(report_fd, f"{outcome}\n{detail}".encode("utf-8", "replace"))
        os._exit(0)

    run_harness(request_fd, reply_fd, spec, report)


if __name__ == "__main__":
    main()
