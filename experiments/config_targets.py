"""Hydra ``_target_`` nodes of train.py's config checked before any work: importable, and their keys parameters.

Every node with a ``_target_`` is checked wherever it sits (``optim.policy_loss.kl_estimator`` as well as
``optim.policy_loss``), and an error names the node's dotted key: a bad target used to surface at build time as
Hydra's instantiate error, naming no config key (issue 28).
"""

from __future__ import annotations

import inspect
from typing import Any

from hydra.utils import get_method
from omegaconf import DictConfig, ListConfig, OmegaConf

from experiments.config_error import ConfigError

__all__ = ["check_targets", "target_nodes"]


def _check_target_kwargs(key: str, node: Any) -> None:
    """Every key of a Hydra ``_target_`` node must be a parameter of the target (typos fail here, not at build)."""
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return
    if OmegaConf.is_interpolation(node, "_target_"):
        return  # checked where it points
    try:
        target = get_method(str(node["_target_"]))
    except Exception as err:  # noqa: BLE001 - Hydra raises several types for an unimportable target
        problem = " ".join(str(err).split())[:300] or type(err).__name__  # Hydra's message spans several lines
        raise ConfigError(
            f"{key}._target_",
            f"cannot import {node['_target_']!r} ({problem})",
            "give an importable dotted path (module.Class or module.function)",
        ) from None
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # accepts anything (transformers' from_pretrained): nothing to check here
    for item in node:
        name = str(item)
        if name.startswith("_") or name in params:
            continue
        raise ConfigError(
            f"{key}.{name}",
            f"not a parameter of {node['_target_']}",
            f"use one of {sorted(n for n in params if not n.startswith('_'))} (a typo?)",
        )


def target_nodes(key: str, node: Any) -> list[tuple[str, DictConfig]]:
    """Every ``_target_`` node under ``node`` with its dotted key (interpolations are checked where they point)."""
    found: list[tuple[str, DictConfig]] = []
    if isinstance(node, DictConfig):
        if "_target_" in node:
            found.append((key, node))
        items = [(f"{key}.{k!s}" if key else str(k), k) for k in node]
    elif isinstance(node, ListConfig):
        items = [(f"{key}[{i}]", i) for i in range(len(node))]
    else:
        return found
    for child_key, k in items:
        if OmegaConf.is_interpolation(node, k):  # type: ignore[arg-type]
            continue
        found.extend(target_nodes(child_key, node._get_node(k)))  # type: ignore[union-attr]
    return found


def check_targets(cfg: DictConfig) -> None:
    """Check every ``_target_`` node of ``cfg`` (Hydra's own ``hydra.*`` aside); raises :class:`ConfigError`."""
    for key, node in target_nodes("", cfg):
        if not key.startswith("hydra."):
            _check_target_kwargs(key, node)
