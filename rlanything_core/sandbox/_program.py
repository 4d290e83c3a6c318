"""Program side of a functional test (stdlib only; runs in the sandbox as the program's uid).

Run as ``python -I -c <_wire.py + this file> PROGRAM_PATH REQUEST_FD REPLY_FD``: executes the program as
``__main__``, then serves the harness's requests (read a global's value, call a function, read an attribute) over the
two pipes until the harness closes them. Everything here runs inside the untrusted program's own process, so nothing
here is trusted: the harness decodes every reply strictly (see ``_wire.py``), and the program can only ever send it
values, never results.
"""

import importlib
import os
import sys
import types
from typing import Any

try:  # for linters and unit tests; inside the sandbox the wire source is concatenated in front of this file
    from rlanything_core.sandbox._wire import ProtocolError, decode_value, encode_value, read_frame, write_frame
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
    hello: Any = read_frame(request_fd)
    data_classes = frozenset(str(n) for n in hello.get("data_classes", ()))
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

    def reply(value: Any) -> None:
        objects: list[Any] = []
        encoded = encode_value(value, data_classes, objects, ref)
        write_frame(reply_fd, {"ok": encoded, "objects": objects})

    names: dict[str, Any] = {}
    name_objects: list[Any] = []
    for key, value in list(g.items()):
        if key.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            names[key] = ["M", value.__name__]
        else:
            names[key] = encode_value(value, data_classes, name_objects, ref)
    write_frame(reply_fd, {"names": names, "objects": name_objects})
    while True:
        try:
            msg: Any = read_frame(request_fd)
        except EOFError:
            return
        try:
            objects = msg.get("objects", [])

            def dec(v: Any, objects: list[Any] = objects) -> Any:
                return decode_value(v, objects, make_object, handle, importlib.import_module)

            target = handle(msg["ref"])
            if msg["op"] == "call":
                args = [dec(a) for a in msg["args"]]
                kwargs = {str(k): dec(v) for k, v in msg["kwargs"]}
                result = target(*args, **kwargs)
            else:
                result = getattr(target, str(msg["name"]))
            sys.stdout.flush()
            reply(result)
        except Exception as exc:  # the program's own failure, reported to the harness as an exception
            try:
                text = str(exc)[:2000]
            except Exception:
                text = "<unprintable>"
            write_frame(reply_fd, {"exc": [type(exc).__name__, text]})


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    sys.stdout.flush()
    os._exit(0)
