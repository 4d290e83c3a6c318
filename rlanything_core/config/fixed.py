"""Keys that a part does not read, or reads at one value only, declared as data and refused at any other value.

A setting that ignores a shared key (coding has no judge votes, so ``lam`` does nothing there) lists it as a
:class:`FixedKey`; :func:`refuse_changed` then refuses an override by name instead of silently ignoring it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from rlanything_core.config.error import ConfigError

__all__ = ["FixedKey", "refuse_changed"]


@dataclass(frozen=True)
class FixedKey:
    """A key that a setting does not read, or reads at one value only: any other value is refused.

    Attributes:
        key: the dotted key (``lam``, ``arm.integrator._target_``, ...).
        value: the one value the setting accepts (the shared default, or the only one that works), resolved.
        why: what the setting does instead, for the error.
    """

    key: str
    value: Any
    why: str


def refuse_changed(cfg: DictConfig, keys: Sequence[FixedKey], setting: str) -> None:
    """Refuse the first of ``keys`` whose resolved value is not its fixed value, naming the key and why.

    Raises:
        ConfigError: a key is set to another value than the one ``setting`` accepts.
    """
    for fixed in keys:
        node = OmegaConf.select(cfg, fixed.key)
        value = OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node
        if value != fixed.value:
            raise ConfigError(
                fixed.key,
                f"{value!r} would do nothing in the {setting} setting, which {fixed.why}",
                f"leave {fixed.key} at {fixed.value!r} (drop the override)",
            )
