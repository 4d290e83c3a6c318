"""Program side of a functional test (stdlib only; runs in the sandbox as the program's uid).

Run as ``python -I -c <_wire.py + this file> PROGRAM_PATH REQUEST_FD REPLY_FD``: executes the program as
``__main__``, then serves the harness's requests (read a global's value, call a function, read an attribute) over the
two pipes until the harness closes them. Everything here runs inside the untrusted program's own process, so nothing
here is trusted: the harness decodes every reply strictly (see ``_wire.py``), and the program can only ever send it
values, never results.
"""

from __future__ import annotations  # stripped when concatenated after _wire.py, which has it

import importlib
import os
import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:  # for linters and unit tests; inside the sandbox the wire source is concatenated in front of this file
    from rlanything_core.sandbox._wire import ProtocolError, dumps, loads, read_frame, write_frame
except ImportError:  # pragma: no cover
    pass

__all__ = ["serve"]


def serve(path: str, request_fd: int, reply_fd: int) -> None:
    """Run the program at ``path`` and answer requests until the harness hangs up."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    sys.argv = [path]
    g = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    exec(compile(src, path, "exec"), g)
    sys.stdout.flush()
    handles: list[Any] = []

    def ref(value: Any) -> int:
        handles.append(value)
        return len(handles) - 1

    def make_object(name: str) -> Any:
        cls = g.get(name)
        if isinstance(cls, type):
            try:
                return object.__new__(cls)
            except TypeError:
                pass
        return types.SimpleNamespace()

    def handle(i: int) -> Any:
        if not 0 <= i < len(handles):
            raise ProtocolError(f"unknown handle {i}")
        return handles[i]

    def receive() -> Any:
        return loads(read_frame(request_fd), make_object, handle, importlib.import_module)

    hello = receive()
    data_classes = frozenset(str(n) for n in hello.get("data_classes", ()))
    names = {k: v for k, v in list(g.items()) if not k.startswith("__")}
    write_frame(reply_fd, dumps({"names": names}, data_classes, ref))
    while True:
        try:
            msg = receive()
        except EOFError:
            return
        try:
            if type(msg) is not dict:
                raise ProtocolError("a request must be a dict")
            target = handle(msg["ref"])
            if msg["op"] == "call":
                result = target(*msg["args"], **msg["kwargs"])
            else:
                result = getattr(target, str(msg["name"]))
            sys.stdout.flush()
            payload = dumps({"ok": result}, data_classes, ref)
        except Exception as exc:  # the program's own failure, reported to the harness as an exception
            try:
                text = str(exc)[:2000]
            except Exception:
                text = "<unprintable>"
            payload = dumps({"exc": [type(exc).__name__, text]}, (), ref)
        write_frame(reply_fd, payload)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    sys.stdout.flush()
    os._exit(0)
