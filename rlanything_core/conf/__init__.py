"""The shipped Hydra configs of a run (``train.yaml``, ``ablate.yaml`` and their groups), data inside the package.

The apps find them on Hydra's package search path (:data:`SEARCH_PATH`), so an installed wheel composes the same
configs as a checkout; :data:`CONF_DIR` is the same folder on disk, for code that reads the files as data (the config
schema's closed top level) or composes with ``hydra.initialize_config_dir``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONF_DIR", "SEARCH_PATH"]

CONF_DIR = Path(__file__).resolve().parent
"""This folder: the shipped config files."""
SEARCH_PATH = "pkg://rlanything_core.conf"
"""The configs as Hydra's ``config_path`` (``@hydra.main(config_path=SEARCH_PATH, ...)``)."""
