"""Check a composed OmegaConf config against dataclasses, before any work: a fault names the key and the fix.

:func:`check_node` merges one part of the config (a ``DictConfig``) into its schema dataclass: OmegaConf checks the
types and Enums (closed sets), ``strict`` refuses keys the schema does not name, and the ranges of
:func:`~rlanything_core.config.fields.bounded` fields are checked on the resolved values. :func:`check_closed` refuses
a key outside a known set (a config's top level), suggesting the nearest known keys. Each fault is one
:class:`~rlanything_core.config.error.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Collection
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from rlanything_core.config.error import ConfigError
from rlanything_core.config.fields import describe_bounds, within

__all__ = ["check_closed", "check_node", "suggest"]


def suggest(key: str, known: Collection[str]) -> str:
    """``"did you mean a or b? "`` for the known keys nearest to ``key``; ``""`` when none is near."""
    close = difflib.get_close_matches(key, sorted(known), n=3)
    return f"did you mean {' or '.join(close)}? " if close else ""


def check_closed(node: DictConfig, known: Collection[str], *, problem: str = "unknown key") -> None:
    """Refuse the first key of ``node`` outside ``known`` (``problem``: what an unknown key is, for the error)."""
    for item in node:
        key = str(item)
        if key not in known:
            fix = f"{suggest(key, known)}remove +{key}=... or use one of {sorted(known)}"
            raise ConfigError(key, problem, fix)


def _enum_of(hint: Any) -> type[Enum] | None:
    """The Enum a type hint names, itself or as an argument (``list[Colour]``, ``Colour | None``)."""
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    return next((e for e in map(_enum_of, typing.get_args(hint)) if e is not None), None)


def _fix(schema: type, name: str) -> str:
    spec = {f.name: f for f in dataclasses.fields(schema)}.get(name)
    if spec is None:
        names = [f.name for f in dataclasses.fields(schema)]
        return f"{suggest(name, names)}use one of {sorted(names)}"
    hint = typing.get_type_hints(schema).get(name, spec.type)
    enum = _enum_of(hint)
    if enum is not None:
        return f"use one of {[m.name for m in enum]}"
    bounds = describe_bounds(dict(spec.metadata))
    kind = hint.__name__ if isinstance(hint, type) else str(hint)  # int, list[int], str | None
    return f"give a value of type {kind}" + (f" ({bounds})" if bounds else "")


def check_node(prefix: str, node: Any, schema: type, *, strict: bool) -> None:
    """Check ``node`` (the config part at dotted ``prefix``, e.g. ``"optim."``) against the dataclass ``schema``.

    Types and Enums by OmegaConf's merge, unknown keys when ``strict`` (otherwise only the schema's keys are checked),
    required keys (no default), then the ranges of the resolved values (an interpolation is range-checked at the key
    it points to).

    Raises:
        ConfigError: on the first fault, naming ``prefix + key`` and the fix.
    """
    if not isinstance(node, DictConfig):
        raise ConfigError(prefix.rstrip("."), f"expected a group of keys, got {node!r}", "give a mapping of keys")
    names = {f.name for f in dataclasses.fields(schema)}
    raw = OmegaConf.to_container(node, resolve=False)
    assert isinstance(raw, dict)
    for key, value in raw.items():
        key = str(key)
        if key not in names:
            if strict:
                raise ConfigError(f"{prefix}{key}", "unknown key", _fix(schema, key))
            continue
        try:
            OmegaConf.merge(OmegaConf.structured(schema), {key: value})
        except (ValidationError, ConfigKeyError) as err:
            raise ConfigError(f"{prefix}{key}", str(err).splitlines()[0], _fix(schema, key)) from None
    for spec in dataclasses.fields(schema):
        if spec.name not in raw:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{prefix}{spec.name}", "missing", f"set {prefix}{spec.name}")
            continue
        if not spec.metadata or OmegaConf.is_interpolation(node, spec.name):
            continue
        try:
            value = node[spec.name]  # resolved now: the types above passed
        except OmegaConfBaseException as err:
            raise ConfigError(f"{prefix}{spec.name}", f"cannot be resolved ({err})", "fix the interpolation") from None
        if value is not None and not within(float(value), dict(spec.metadata)):
            raise ConfigError(f"{prefix}{spec.name}", f"out of range: {value!r}", _fix(schema, spec.name))
