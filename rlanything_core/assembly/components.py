"""The parts Hydra builds from ``_target_`` nodes that need more than ``instantiate(node)``.

The judge's loss and targets (only where the arm trains the judge), selectors, vote samplers, rewriters, the task pool.
Every public hyperparameter of these parts is a key of ``rlanything_core/conf/train.yaml``. A variant is a node chosen
by name (``model.action_selection``, ``model.judge_votes``, ``setting.rewriter``), never a branch here; the functions
below only add what exists at run time (a sampling temperature, the judge's chat model, a folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.assembly.checks import band
from rlanything_core.config import ConfigError
from rlanything_core.rewards.targets import UnitTestTargets

__all__ = [
    "judge_loss",
    "judge_targets",
    "rewriter",
    "selector",
    "task_pool",
    "unit_test_targets",
    "variant",
    "vote_sampler",
]


def variant(cfg: DictConfig, group: str, name: str, key: str) -> DictConfig:
    """The ``group.name`` node (``key`` is the config key that chose ``name``, named in the error)."""
    node = OmegaConf.select(cfg, f"{group}.{name}")
    if node is None:
        known = sorted(OmegaConf.select(cfg, group, default={}) or {})
        raise ConfigError(key, f"unknown {name!r} (no node {group}.{name})", f"use one of {known}")
    return node  # type: ignore[no-any-return]


def selector(cfg: DictConfig, temperature: float) -> Any:
    """The policy's action selector ``selectors[model.action_selection]``, sampling at ``temperature``."""
    node = variant(cfg, "selectors", str(cfg.model.action_selection), "model.action_selection")
    if "sampling" in node:  # a generating selector: the temperature belongs to its sampling parameters
        return instantiate(node, sampling={"temperature": temperature})
    return instantiate(node, temperature=temperature)


def vote_sampler(cfg: DictConfig) -> Any:
    """The judge's vote sampler: ``votes[arm.judge_votes]`` where the arm names one, else ``votes[model.judge_votes]``.

    An experiment's arm names its own (the judge of known quality, rlanything_core/conf/arm/e3_*.yaml).
    """
    arm_votes = OmegaConf.select(cfg, "arm.judge_votes", default=None)
    if arm_votes is not None:
        return instantiate(variant(cfg, "votes", str(arm_votes), "arm.judge_votes"))
    return instantiate(variant(cfg, "votes", str(cfg.model.judge_votes), "model.judge_votes"))


def judge_targets(cfg: DictConfig) -> Any:
    """``judge_targets`` (a ``ConsistencyTargets``) where the arm trains the judge, else ``None``."""
    return instantiate(cfg.judge_targets) if cfg.arm.train_judge else None


def unit_test_targets(cfg: DictConfig) -> UnitTestTargets | None:
    """The coding judge's targets where the arm trains the judge, else ``None``.

    ``judge_targets.format_penalty``, ``.eps`` and ``.drop_zero_rows`` apply to the unit tests as to the votes;
    ``setting.test_format_without_reference`` decides whether a task without a correct program rewards its tests'
    format.
    """
    if not cfg.arm.train_judge:
        return None
    node = cfg.judge_targets
    return UnitTestTargets(
        format_penalty=float(node.format_penalty),
        eps=float(node.eps),
        format_without_reference=bool(cfg.setting.test_format_without_reference),
        drop_zero_rows=bool(node.drop_zero_rows),
    )


def judge_loss(cfg: DictConfig) -> Any:
    """``optim.judge_loss`` (a ``PolicyLoss``) where the arm trains the judge, else ``None``."""
    return instantiate(cfg.optim.judge_loss) if cfg.arm.train_judge else None


def rewriter(cfg: DictConfig, name: str, *, group: str = "rewriters", **runtime: Any) -> Any:
    """The task rewriter ``<group>[name]``, given the run-time arguments ``runtime`` (a chat model, a folder)."""
    node = variant(cfg, group, name, "setting.rewriter")
    # a partial, then the objects: Hydra would merge keyword objects into the config (a dataclass chat model becomes a
    # structured config, and its annotations fail to resolve)
    return instantiate(node, _partial_=True)(**runtime)


def task_pool(cfg: DictConfig, run_dir: Path, roots: list[Any]) -> Any:
    """The task pool, read-only on every rank.

    The writer (global rank 0) is chosen once the process group exists (``PoolSnapshots.save_initial_pool`` /
    ``restore_pool``) and broadcasts its state to the others.
    """
    env_band = band(cfg, "env_band", strict=True)
    if (run_dir / "pool" / "state.json").is_file():  # a rerun: rolled back to the checkpoint's (or initial) snapshot
        return TaskPool.load(run_dir, writer=False)
    return TaskPool.create(run_dir, roots, band=env_band, writer=False)
