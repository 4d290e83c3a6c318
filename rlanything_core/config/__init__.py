"""Checking a composed config before any work: a fault names the dotted key, the problem and the fix.

- :mod:`~rlanything_core.config.error`: :class:`ConfigError`, the one error of every check;
- :mod:`~rlanything_core.config.fields`: :func:`bounded`, a dataclass field carrying its range;
- :mod:`~rlanything_core.config.derive`: a schema generated from the dataclass of the part it configures;
- :mod:`~rlanything_core.config.schema`: an OmegaConf node against its schema dataclass (types, Enums, unknown keys,
  ranges), a closed set of keys with "did you mean" suggestions;
- :mod:`~rlanything_core.config.targets`: every ``_target_`` node importable, its keys the target's parameters.

The last two need ``omegaconf`` (the ``loop`` extra); this module and the first three import nothing outside the
standard library, so that a part's dataclass can carry its ranges without depending on a config library.
"""

from __future__ import annotations

from rlanything_core.config.error import ConfigError
from rlanything_core.config.fields import bounded

__all__ = ["ConfigError", "bounded"]
