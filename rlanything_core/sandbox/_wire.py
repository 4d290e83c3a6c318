"""Wire format between the functional-test harness and the program under test (stdlib only, runs in the sandbox).

The harness (trusted test code) and the program run in two processes, under two different uids; they talk over two
pipes with length-prefixed JSON frames. Values cross as *plain data* only, in a tagged JSON form, and the receiver
rebuilds them from its own types, so an object of the program's making (for example one whose ``__eq__`` is always
true) never reaches the harness: it arrives as an opaque remote handle that compares by identity.

Value encoding (JSON): ``None``, ``bool``, ``int``, ``float`` (``Infinity``/``NaN`` allowed) and ``str`` are JSON
scalars; every JSON array is a tagged container ``[tag, ...]``: ``"L"`` list, ``"T"`` tuple, ``"S"`` set, ``"F"``
frozenset, ``"D"`` dict (``[key, value]`` pairs), ``"B"`` bytes (base64), ``"C"`` complex (real, imag), ``"O"`` the
index of an object in the frame's object table (instances of the harness's data classes such as ``ListNode``,
cycles allowed), ``"R"`` a remote handle number, ``"M"`` a module name. JSON objects are not values.

This file is concatenated in front of ``_harness.py`` and ``_program.py`` and run with ``python -c``.
"""

import base64
import json
import os
import struct
from collections.abc import Callable, Collection
from typing import Any

__all__ = ["MAX_FRAME", "ProtocolError", "decode_value", "encode_value", "read_frame", "write_frame"]

MAX_FRAME = 64 << 20
_SCALARS = (type(None), bool, int, float, str)


class ProtocolError(Exception):
    """A frame or value that does not follow the wire format."""


def write_frame(fd: int, message: object) -> None:
    """Write one JSON message with its 4-byte big-endian length."""
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> object:
    """Read one message (EOFError when the peer is gone, ProtocolError on a malformed or oversized frame)."""
    (size,) = struct.unpack(">I", _read_exact(fd, 4))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    try:
        return json.loads(_read_exact(fd, size))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"malformed frame: {exc}") from None


def encode_value(value: object, data_classes: Collection[str], objects: list[Any], ref: Callable[[Any], int]) -> Any:
    """Encode ``value`` as tagged JSON.

    Args:
        value: the value.
        data_classes: names of classes whose instances cross by value (their ``__dict__``, recursively).
        objects: the frame's object table (filled here): ``[class name, [[attr, value], ...]]`` per object.
        ref: called with any other value; returns its handle number (or raises TypeError).
    """
    memo: dict[int, int] = {}

    def enc(v: Any) -> Any:
        t = type(v)
        if t in _SCALARS:
            return v
        if t is list:
            return ["L", *[enc(x) for x in v]]
        if t is tuple:
            return ["T", *[enc(x) for x in v]]
        if t is set or t is frozenset:
            return ["S" if t is set else "F", *[enc(x) for x in v]]
        if t is dict:
            return ["D", *[[enc(k), enc(x)] for k, x in v.items()]]
        if t is bytes:
            return ["B", base64.b64encode(v).decode("ascii")]
        if t is complex:
            return ["C", v.real, v.imag]
        if t.__name__ in data_classes and isinstance(getattr(v, "__dict__", None), dict):
            if id(v) in memo:
                return ["O", memo[id(v)]]
            memo[id(v)] = len(objects)
            slot: list[Any] = [t.__name__, []]
            objects.append(slot)
            slot[1] = [[str(k), enc(x)] for k, x in list(v.__dict__.items())]
            return ["O", memo[id(v)]]
        return ["R", ref(v)]

    return enc(value)


def decode_value(
    value: Any,
    objects: list[Any],
    make_object: Callable[[str], Any],
    handle: Callable[[int], Any],
    module: Callable[[str], Any],
) -> Any:
    """Rebuild a value from its tagged JSON (strict: anything outside the format raises ProtocolError).

    Args:
        value: the tagged JSON.
        objects: the frame's object table.
        make_object: ``(class name) -> empty instance`` of the receiver's own class (or raise ProtocolError).
        handle: ``(number) -> object`` standing for a remote value.
        module: ``(name) -> object`` for a module name.
    """
    built: dict[int, Any] = {}

    def obj(i: Any) -> Any:
        if type(i) is not int or not 0 <= i < len(objects):
            raise ProtocolError(f"bad object index {i!r}")
        if i not in built:
            entry = objects[i]
            if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not str or type(entry[1]) is not list:
                raise ProtocolError("bad object entry")
            inst = make_object(entry[0])
            built[i] = inst
            for pair in entry[1]:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                    raise ProtocolError("bad object attribute")
                inst.__dict__[pair[0]] = dec(pair[1])
        return built[i]

    def dec(v: Any) -> Any:
        t = type(v)
        if t in _SCALARS:
            return v
        if t is not list or not v or type(v[0]) is not str:
            raise ProtocolError(f"not a wire value: {type(v).__name__}")
        tag, items = v[0], v[1:]
        if tag == "L":
            return [dec(x) for x in items]
        if tag == "T":
            return tuple(dec(x) for x in items)
        if tag in ("S", "F"):
            values = [dec(x) for x in items]
            return set(values) if tag == "S" else frozenset(values)
        if tag == "D":
            out: dict[Any, Any] = {}
            for pair in items:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("bad dict item")
                out[dec(pair[0])] = dec(pair[1])
            return out
        if tag == "B" and len(items) == 1 and type(items[0]) is str:
            return base64.b64decode(items[0].encode("ascii"), validate=True)
        if tag == "C" and len(items) == 2 and all(type(x) in (int, float) for x in items):
            return complex(items[0], items[1])
        if tag == "O" and len(items) == 1:
            return obj(items[0])
        if tag == "R" and len(items) == 1 and type(items[0]) is int:
            return handle(items[0])
        if tag == "M" and len(items) == 1 and type(items[0]) is str:
            return module(items[0])
        raise ProtocolError(f"bad tag {tag!r}")

    try:
        return dec(value)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:  # unhashable keys, bad base64, deep
        raise ProtocolError(f"undecodable value: {type(exc).__name__}: {exc}") from None
