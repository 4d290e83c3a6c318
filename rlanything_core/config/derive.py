"""A config schema generated from the dataclass of the part it configures, so that the two stay one definition.

A part (``rlanything_core.settings.alfworld.AlfworldTasks``) is a frozen dataclass with abstract field types
(``Sequence[int]``, ``Mapping[str, str]``) and its ranges in each field's ``metadata``
(:func:`~rlanything_core.config.fields.bounded`); :func:`schema_of` gives the OmegaConf-ready dataclass of the config
keys it reads (``list``, ``dict``), on top of a base schema of shared keys.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import typing
from typing import Any

__all__ = ["schema_of"]

_CONCRETE: dict[Any, Any] = {collections.abc.Sequence: list, collections.abc.Mapping: dict}
_FRESH: dict[type, Any] = {tuple: list, list: list, dict: dict}


def _concrete(hint: Any) -> Any:
    """``Sequence[int]`` -> ``list[int]``, ``Mapping[str, str]`` -> ``dict[str, str]`` (what OmegaConf checks)."""
    origin = typing.get_origin(hint)
    return _CONCRETE[origin][typing.get_args(hint)] if origin in _CONCRETE else hint


def schema_of(part: type, *, keys: tuple[str, ...], base: type, name: str) -> type:
    """A dataclass ``name``: ``base``'s fields, and ``part``'s fields named in ``keys`` (types, defaults, ranges).

    Raises:
        ValueError: a name of ``keys`` is not a field of ``part``.
    """
    fields = {f.name: f for f in dataclasses.fields(part)}
    hints = typing.get_type_hints(part)
    unknown = sorted(set(keys) - set(fields))
    if unknown:
        raise ValueError(f"keys {unknown} are not fields of {part.__qualname__}: use some of {sorted(fields)}")
    specs = []
    for key in keys:
        spec = fields[key]
        if isinstance(spec.default, (tuple, list, dict)):  # a fresh list or dict per config
            made = dataclasses.field(default_factory=functools.partial(_FRESH[type(spec.default)], spec.default),
                                     metadata=spec.metadata)  # fmt: skip
        else:
            made = dataclasses.field(default=spec.default, default_factory=spec.default_factory, metadata=spec.metadata)
        specs.append((key, _concrete(hints[key]), made))
    return dataclasses.make_dataclass(name, specs, bases=(base,))
