"""Wire format between the functional-test harness and the program under test (stdlib only, runs in the sandbox).

The harness (trusted test code) and the program run in two processes, under two different uids; they talk over two
pipes with length-prefixed frames. Values cross as *plain data* only and the receiver rebuilds them from its own
types, so an object of the program's making (for example one whose ``__eq__`` is always true) never reaches the
harness: it arrives as an opaque remote handle that compares by identity.

The format is a small tagged byte encoding with an import-free parser (``json`` alone would double the harness's
start-up time, since it imports ``re``). A value is one of: ``N`` None, ``T``/``F`` bools, ``i<hex>;`` int,
``f<float.hex>;`` float (inf and nan included), ``c<hex>;<hex>;`` complex, ``s<n>:<utf-8>`` str, ``b<n>:<bytes>``
bytes, ``l``/``t``/``e``/``z<n>:`` list/tuple/set/frozenset of n values, ``d<n>:`` dict of n key/value pairs,
``o<i>;`` the i-th object of the frame, ``r<i>;`` remote handle i, ``m`` + a str: a module name. A frame is
``<4-byte big-endian length>`` + a list of the class names of its objects + one attribute dict per object (objects
are created first, so attributes may refer to any object, cycles included) + the message. Only instances of the
``data_classes`` both sides agree on (for example LeetCode's ``ListNode``) cross by value as objects.

This file is concatenated in front of ``_harness.py`` and ``_program.py`` and run with ``python -c``.
"""

from __future__ import annotations  # the whole concatenated script: annotations stay unevaluated

import os

TYPE_CHECKING = False  # typing costs start-up time in every test process; mypy treats this name as True
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import Any

__all__ = ["MAX_FRAME", "ProtocolError", "dumps", "loads", "read_frame", "write_frame"]

MAX_FRAME = 64 << 20
_SEQ_TAGS: dict[type, bytes] = {list: b"l", tuple: b"t", set: b"e", frozenset: b"z"}


class ProtocolError(Exception):
    """A frame or value that does not follow the wire format."""


_NOT_PLAIN = object()


def _plain_copy(v: Any) -> Any:
    """The plain value under a subclass of a plain type (namedtuple, Counter, IntEnum, ...), else ``_NOT_PLAIN``.

    Read with the base type's own methods so that no override runs (a NumPy value: ``tolist()``). The copy is what
    the receiver compares, so an overridden ``__eq__`` on the subclass is simply dropped.
    """
    if isinstance(v, int):
        return int.__int__(v)
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, complex):
        return complex.__complex__(v)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        return bytes.__bytes__(v)
    base: Any
    for base in (list, tuple, set, frozenset):
        if isinstance(v, base):
            return base(base.__iter__(v))
    if isinstance(v, dict):
        return dict(dict.items(v))
    if type(v).__module__ == "numpy" and callable(getattr(v, "tolist", None)):
        return v.tolist()
    return _NOT_PLAIN


def dumps(message: object, data_classes: Collection[str], ref: Callable[[Any], int]) -> bytes:
    """Encode ``message`` (plain data; instances of ``data_classes`` by value; anything else as ``ref(value)``)."""
    out: list[bytes] = []
    memo: dict[int, int] = {}
    objects: list[Any] = []

    def enc(v: Any, out: list[bytes]) -> None:
        t = type(v)
        if v is None:
            out.append(b"N")
        elif t is bool:
            out.append(b"T" if v else b"F")
        elif t is int:
            out.append(b"i%x;" % v if v >= 0 else b"i-%x;" % -v)
        elif t is float:
            out.append(b"f" + v.hex().encode() + b";")
        elif t is complex:
            out.append(b"c" + v.real.hex().encode() + b";" + v.imag.hex().encode() + b";")
        elif t is str:
            data = v.encode("utf-8", "surrogatepass")
            out.append(b"s%d:" % len(data) + data)
        elif t is bytes:
            out.append(b"b%d:" % len(v) + v)
        elif t in _SEQ_TAGS:
            out.append(_SEQ_TAGS[t] + b"%d:" % len(v))
            for x in v:
                enc(x, out)
        elif t is dict:
            out.append(b"d%d:" % len(v))
            for k, x in v.items():
                enc(k, out)
                enc(x, out)
        elif t.__name__ == "module" and isinstance(getattr(v, "__name__", None), str):
            out.append(b"m")
            enc(v.__name__, out)
        elif t.__name__ in data_classes and type(getattr(v, "__dict__", None)) is dict:
            if id(v) not in memo:
                memo[id(v)] = len(objects)
                objects.append(v)
            out.append(b"o%x;" % memo[id(v)])
        else:
            plain = _plain_copy(v)
            if plain is _NOT_PLAIN:
                out.append(b"r%x;" % ref(v))
            else:
                enc(plain, out)

    enc(message, out)
    head: list[bytes] = []
    attrs: list[bytes] = []
    i = 0
    while i < len(objects):  # attribute values may add objects: walk until the table stops growing
        obj = objects[i]
        enc({str(k): x for k, x in list(obj.__dict__.items())}, attrs)
        i += 1
    enc([type(o).__name__ for o in objects], head)
    return b"".join(head + attrs + out)


def loads(
    data: bytes,
    make_object: Callable[[str], Any],
    handle: Callable[[int], Any],
    module: Callable[[str], Any],
) -> Any:
    """Decode a frame's payload strictly (anything outside the format raises ProtocolError).

    Args:
        data: the payload.
        make_object: ``(class name) -> empty instance`` of the receiver's own class (or raise ProtocolError).
        handle: ``(number) -> object`` standing for a remote value.
        module: ``(name) -> object`` for a module name.
    """
    # Stays one function: a recursive-descent decoder whose nested readers share one read position over ``data``.
    pos = 0
    objects: list[Any] = []

    def number(end: bytes) -> int:
        nonlocal pos
        stop = data.index(end, pos)
        text = data[pos:stop].decode("ascii")
        pos = stop + 1
        return int(text, 16) if end == b";" else int(text)

    def count() -> int:
        n = number(b":")
        if n < 0 or n > len(data):
            raise ProtocolError(f"bad length {n}")
        return n

    def raw(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise ProtocolError("truncated value")
        pos += n
        return data[pos - n : pos]

    def dec() -> Any:  # noqa: C901 - one branch per tag
        nonlocal pos
        if pos >= len(data):
            raise ProtocolError("truncated frame")
        tag = data[pos : pos + 1]
        pos += 1
        if tag == b"N":
            return None
        if tag in (b"T", b"F"):
            return tag == b"T"
        if tag == b"i":
            return number(b";")
        if tag in (b"f", b"c"):
            parts = []
            for _ in range(1 if tag == b"f" else 2):
                stop = data.index(b";", pos)
                parts.append(float.fromhex(data[pos:stop].decode("ascii")))
                pos = stop + 1
            return parts[0] if tag == b"f" else complex(parts[0], parts[1])
        if tag == b"s":
            return raw(count()).decode("utf-8", "surrogatepass")
        if tag == b"b":
            return raw(count())
        if tag in (b"l", b"t", b"e", b"z"):
            items = [dec() for _ in range(count())]
            return {b"l": list, b"t": tuple, b"e": set, b"z": frozenset}[tag](items)
        if tag == b"d":
            out = {}
            for _ in range(count()):
                key = dec()
                out[key] = dec()
            return out
        if tag == b"o":
            i = number(b";")
            if not 0 <= i < len(objects):
                raise ProtocolError(f"bad object index {i}")
            return objects[i]
        if tag == b"r":
            return handle(number(b";"))
        if tag == b"m":
            name = dec()
            if type(name) is not str:
                raise ProtocolError("bad module name")
            return module(name)
        raise ProtocolError(f"bad tag {tag!r}")

    try:
        names = dec()
        if type(names) is not list or not all(type(n) is str for n in names):
            raise ProtocolError("bad object table")
        objects.extend(make_object(n) for n in names)
        for obj in list(objects):
            attrs = dec()
            if type(attrs) is not dict or not all(type(k) is str for k in attrs):
                raise ProtocolError("bad object attributes")
            obj.__dict__.update(attrs)
        message = dec()
    except ProtocolError:
        raise
    except (ValueError, TypeError, AttributeError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"undecodable frame: {type(exc).__name__}: {exc}") from None
    if pos != len(data):
        raise ProtocolError("trailing bytes after the message")
    return message


def write_frame(fd: int, payload: bytes) -> None:
    """Write one payload with its 4-byte big-endian length."""
    view = memoryview(len(payload).to_bytes(4, "big") + payload)
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


def read_frame(fd: int) -> bytes:
    """Read one payload (EOFError when the peer is gone, ProtocolError on an oversized frame)."""
    size = int.from_bytes(_read_exact(fd, 4), "big")
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    return _read_exact(fd, size)
