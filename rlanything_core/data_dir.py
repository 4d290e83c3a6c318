"""Where the offline data lives (ALFWorld's games, the coding sets, OSWorld's tasks): one setting, ``RLANYTHING_DATA``.

The data folder holds ``alfworld/`` (with ``json_2.1.1/``), ``coding/`` and the other sets side by side. It is, in
order: the environment variable ``RLANYTHING_DATA``; in a checkout of the repository, the folder ``shared`` beside the
checkout (``<repo>/../shared``, whatever the current directory); installed from a wheel, ``../shared`` relative to the
current directory. A setting's own key (``setting.data_root``, ``setting.data_dir``) or ALFWorld's own
``ALFWORLD_DATA`` still wins for that setting; a missing folder is reported naming ``RLANYTHING_DATA``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "checkout_root", "data_dir"]

DATA_ENV = "RLANYTHING_DATA"
"""The environment variable naming the data folder."""


def checkout_root() -> Path | None:
    """The repository root when the package runs from a checkout (its ``pyproject.toml`` beside it), else ``None``."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "rlanything_core").is_dir() else None


def data_dir() -> Path:
    """The data folder: ``$RLANYTHING_DATA``, else ``<checkout>/../shared``, else ``./../shared`` (see the module)."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser().resolve()
    root = checkout_root()
    return ((root if root is not None else Path.cwd()).parent / "shared").resolve()
