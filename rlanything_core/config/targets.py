"""A config's ``_target_`` nodes (Hydra's convention for "build this") checked before any work.

Every node with a ``_target_`` is checked wherever it sits (``optim.policy_loss.kl_estimator`` as well as
``optim.policy_loss``): the target imports, and each of the node's keys is a parameter of it; an error names the
node's dotted key, where Hydra's instantiate error at build time names none.
"""

from __future__ import annotations

import inspect
import pydoc
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from rlanything_core.config.error import ConfigError
from rlanything_core.config.schema import suggest

__all__ = ["check_targets", "target_nodes"]


def _check_target_kwargs(key: str, node: DictConfig) -> None:
    """Every key of a ``_target_`` node must be a parameter of the target (typos fail here, not at build)."""
    if OmegaConf.is_interpolation(node, "_target_"):
        return  # checked where it points
    try:
        target = pydoc.locate(str(node["_target_"]))  # the standard library's dotted-path lookup: None if not found
        problem = "no such module or attribute" if target is None else "not callable"
    except Exception as err:  # noqa: BLE001 - importing a module may raise anything
        target, problem = None, " ".join(str(err).split())[:300] or type(err).__name__
    if not callable(target):
        raise ConfigError(f"{key}._target_", f"{node['_target_']!r} is no importable callable ({problem})",
                          "give an importable dotted path (module.Class or module.function)")  # fmt: skip
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # accepts anything (transformers' from_pretrained): nothing to check here
    public = sorted(n for n in params if not n.startswith("_"))
    for item in node:
        name = str(item)
        if not name.startswith("_") and name not in params:
            raise ConfigError(f"{key}.{name}", f"not a parameter of {node['_target_']}",
                              f"{suggest(name, public)}use one of {public}")  # fmt: skip


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


def check_targets(cfg: DictConfig, *, skip: tuple[str, ...] = ("hydra.",)) -> None:
    """Check every ``_target_`` node of ``cfg`` except those under the ``skip`` prefixes (Hydra's own node).

    Raises:
        ConfigError: an unimportable target, or a key that is not a parameter of its target.
    """
    for key, node in target_nodes("", cfg):
        if not key.startswith(skip):
            _check_target_kwargs(key, node)
