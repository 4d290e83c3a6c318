"""The schema of a run's config: typed dataclasses (registered in Hydra's ConfigStore) checked before any work.

Each dataclass gives the keys of one part of the config, their types (Enums for closed sets) and their ranges
(:func:`~rlanything_core.config.fields.bounded`); :func:`check_schema` checks the composed config against them with
``rlanything_core.config`` (a fault is a :class:`~rlanything_core.config.error.ConfigError` naming the key and the fix).
The keys a setting's part reads are generated from the part's own dataclass (``AlfworldTasks``, ``TextWorldTasks``:
one definition of their types, defaults and ranges); the rest have no dataclass of their own yet and are written here.

The top level is closed: a key that neither :class:`TopLevelSchema` nor any file of the shipped configs
(:data:`CONF_DIR`) defines, nor :data:`RUNTIME_KEYS`, is refused (Hydra's ``+`` adds a key even in struct mode).
``optim`` and ``eval`` are checked key by key, and so is ``model`` (every model has the keys of :class:`ModelSchema`); a
``setting`` whose ``name`` is in :data:`SETTING_SCHEMAS` strictly (every key known), any other by the shared keys of
:class:`SettingSchema` only (a new setting registers its dataclass with :func:`register_setting`). Every ``_target_``
node is checked against its target's signature.

Why not the schema as the first entry of ``train.yaml``'s defaults list: the whole config would become a structured
one, closed to keys no dataclass names, so every ``+profile`` would need its dataclass before it could compose, and
Hydra's error names the merge, not the fix. The explicit check keeps the same dataclasses, each with its strictness.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from rlanything_core import conf
from rlanything_core.config import ConfigError, bounded
from rlanything_core.config.derive import schema_of
from rlanything_core.config.schema import check_closed, check_node
from rlanything_core.config.targets import check_targets
from rlanything_core.settings.alfworld import AlfworldTasks
from rlanything_core.settings.textworld import TextWorldTasks

__all__ = ["RUNTIME_KEYS", "SETTING_SCHEMAS", "ModelSchema", "SettingSchema", "check_schema", "register_setting",
           "top_level_keys"]  # fmt: skip

CONF_DIR = conf.CONF_DIR
"""The shipped config files (``rlanything_core/conf``, inside the package), read as data for the keys they define."""
RUNTIME_KEYS = {"hydra", "seed_worker"}
"""Top-level keys no shipped file defines: Hydra's own node and those ablate.py adds on its workers' command lines."""

# Closed sets: a config names a member (OmegaConf accepts the name).
Rewriter = Enum("Rewriter", "rules llm")  # setting.rewriter (alfworld)
CodePrefill = Enum("CodePrefill", "none fence starter")  # setting.code_prefill: rlanything_core.collect.prefill
CodingSet = Enum("CodingSet", "kickstart codecontests")  # setting.train_sets
EvalSet = Enum("EvalSet", "leetcode_lcb livebench")  # setting.eval_set
ActionSelection = Enum("ActionSelection", "likelihood boxed scorer")  # model.action_selection: a node of selectors.*
JudgeVotes = Enum("JudgeVotes", "scored generative encoder")  # model.judge_votes: a node of votes.*


@dataclass
class OptimSchema:
    """``optim.*`` (``*_loss`` and ``*_optimizer`` are ``_target_`` nodes, checked against their target)."""

    policy_lr: float = bounded(3e-4, gt=0)
    judge_lr: float = bounded(3e-4, gt=0)
    policy_updates: int = bounded(1, ge=1)
    judge_updates: int = bounded(1, ge=1)
    policy_epochs: int = bounded(1, ge=1)
    judge_epochs: int = bounded(1, ge=1)
    policy_warmup_steps: int = bounded(0, ge=0)
    judge_warmup_steps: int = bounded(0, ge=0)
    micro_batch_tokens: int = bounded(8192, ge=1)
    max_grad_norm: float = bounded(1.0, gt=0)
    clip_eps_low: float = bounded(0.2, ge=0, lt=1)
    clip_eps_high: float = bounded(0.2, ge=0)
    kl_coef: float = bounded(0.01, ge=0)
    policy_loss: Any = None
    judge_loss: Any = None
    policy_optimizer: Any = None
    judge_optimizer: Any = None


@dataclass
class EvalSchema:
    """``eval.*`` (train.yaml says what each key does)."""

    every: int = bounded(0, ge=0)
    at_start: bool = True
    games: int | None = bounded(8, ge=1)
    runs: int = bounded(1, ge=1)
    oracle_episodes: int = bounded(4, ge=0)
    temperature: float = bounded(1.0, gt=0)
    seed: int = 4242
    per_seed_episodes: bool = True
    sample_seed: int = 0
    judge_every: int = bounded(0, ge=0)
    judge_episodes: int | None = bounded(None, ge=1)
    probe_file: str | None = None
    oracle_deadline_s: float | None = bounded(None, gt=0)  # opt-in: +eval.oracle_deadline_s=60


@dataclass
class TopLevelSchema:
    """The shared top-level keys of train.yaml (other top-level keys belong to their own groups)."""

    seed: int = 0
    run_dir: str = "runs"
    resume: bool = True
    iterations: int = bounded(12, ge=1)
    tasks_per_iteration: int = bounded(4, ge=1)
    group_size: int = bounded(4, ge=1)
    num_votes: int = bounded(3, ge=0)  # >= 1 when the arm uses the judge (rlanything_core/assembly/checks.py)
    lam: float = bounded(1.0, ge=0)
    balance_judge_targets: bool = False
    policy_band: list[float] = bounded([0.125, 0.875])
    judge_band: list[float] = bounded([0.2, 0.8])
    env_band: list[float] = bounded([0.2, 0.8])
    max_rewrites_per_iteration: int = bounded(4, ge=0)
    progress: bool = True
    eval_only: bool = False
    step_records: bool = True  # opt-out (+step_records=false): the per-step records (rlanything_core/loop/step_records)


@dataclass
class SettingSchema:
    """Keys every setting may have (the profiles set the optional ones for whichever setting is chosen)."""

    name: str = dataclasses.MISSING  # type: ignore[assignment]
    parts: Any = None  # the Setting's ``_target_`` node (rlanything_core/assembly/setting.py)
    train_games: int | None = bounded(None, ge=1)
    max_steps: int | None = bounded(None, ge=1)
    eval_max_steps: int | None = bounded(None, ge=1)
    env_workers: int | None = bounded(None, ge=1)
    test_max_new_tokens: int | None = bounded(None, ge=1)  # the smoke profile sets it for any setting (coding reads it)


@dataclass
class _AgentSetting(SettingSchema):
    max_history_turns: int = bounded(2, ge=0)


@dataclass
class _AlfworldKeys(_AgentSetting):
    rewriter: Rewriter = Rewriter.rules


@dataclass
class CodingSetting(SettingSchema):
    """``setting=coding`` and ``setting=livebench`` (conf/setting/coding.yaml says what each key does)."""

    data_dir: str | None = None
    train_sets: list[CodingSet] = bounded(["kickstart", "codecontests"])
    train_problems: int | None = bounded(16, ge=1)
    max_statement_chars: int = bounded(6000, ge=1)
    gt_tests: int = bounded(8, ge=1)
    eval_set: EvalSet = EvalSet.leetcode_lcb
    livebench_file: str | None = None
    eval_problems: int | None = bounded(8, ge=1)
    eval_samples: int = bounded(1, ge=1)
    eval_tests_per_task: int = bounded(4, ge=1)
    max_new_tokens: int = bounded(64, ge=1)
    tests_per_task: int = bounded(4, ge=1)
    test_temperature: float = bounded(0.8, gt=0)
    code_prefill: CodePrefill = CodePrefill.starter
    test_scaffold: bool = True
    test_format_without_reference: bool = True
    sandbox_workers: int = bounded(2, ge=1)
    rewriter_samples: int = bounded(3, ge=1)
    rewriter_max_new_tokens: int = bounded(64, ge=1)


@dataclass
class ModelSchema:
    """``model.*`` (``policy`` / ``judge`` / ``tokenizer`` are ``_target_`` nodes, checked against their target)."""

    name: str = dataclasses.MISSING  # type: ignore[assignment]
    policy_init: str | None = None
    policy: Any = None
    judge: Any = None
    tokenizer: Any = None
    action_selection: ActionSelection = ActionSelection.likelihood
    judge_votes: JudgeVotes = JudgeVotes.scored
    temperature: float = bounded(1.0, gt=0)
    judge_temperature: float = bounded(1.0, gt=0)
    max_new_tokens: int = bounded(64, ge=1)
    batch_size: int = bounded(16, ge=1)
    architecture: str | None = None  # a transformers config.json (meta-device memory plans, no hub)
    judge_max_new_tokens: int | None = bounded(None, ge=1)  # None: max_new_tokens
    top_p: float = bounded(1.0, gt=0)
    # encoder models: the judge reads the policy's store of frozen-bottom outputs where the two bottoms are equal
    # (absent from the shipped configs, so that earlier runs' configs still match; +model.share_frozen_bottom=false)
    share_frozen_bottom: bool = True


SETTING_SCHEMAS: dict[str, type] = {
    "alfworld": schema_of(AlfworldTasks, keys=("data_root", "train_split", "train_sample_seed", "task_types",
                                               "eval_splits"), base=_AlfworldKeys, name="AlfworldSetting"),  # fmt: skip
    "textworld": schema_of(TextWorldTasks, keys=("nb_objects", "train_quest_lengths", "train_rooms", "seeds_per_cell",
                                                 "eval_quest_lengths", "eval_rooms", "cache_dir"),
                           base=_AgentSetting, name="TextworldSetting"),  # fmt: skip
    "coding": CodingSetting,
    "livebench": CodingSetting,
}
"""Settings checked strictly (every key known); other setting names get the shared keys checked."""
_PARTS = {"optim": OptimSchema, "eval": EvalSchema, "model": ModelSchema}
"""Parts checked strictly whatever their choice (every model's keys are read by the one builder)."""


def register_setting(name: str, schema: type) -> None:
    """Check ``setting.name == name`` configs strictly against the dataclass ``schema`` (a :class:`SettingSchema`)."""
    SETTING_SCHEMAS[name] = schema
    ConfigStore.instance().store(group="schema/setting", name=name, node=schema)


for _name, _node in {"top_level": TopLevelSchema, **_PARTS}.items():
    ConfigStore.instance().store(group="schema", name=_name, node=_node)
for _name, _node in SETTING_SCHEMAS.items():
    register_setting(_name, _node)


@functools.lru_cache(maxsize=4)
def _file_keys(conf_dir: Path) -> frozenset[str]:
    nodes = [OmegaConf.load(path) for path in sorted(conf_dir.rglob("*.yaml"))]
    return frozenset(str(k) for node in nodes if isinstance(node, DictConfig) for k in node if k != "defaults")


def top_level_keys(conf_dir: Path = CONF_DIR) -> frozenset[str]:
    """Every known top-level key: :class:`TopLevelSchema`'s, the shipped files' and :data:`RUNTIME_KEYS`."""
    return frozenset({f.name for f in dataclasses.fields(TopLevelSchema)} | _file_keys(conf_dir) | RUNTIME_KEYS)


def check_schema(cfg: DictConfig) -> None:
    """Check ``cfg`` against the schema (see the module docstring); raises :class:`ConfigError` on the first fault."""
    check_closed(cfg, top_level_keys(), problem="unknown top-level key (no config file or schema defines it)")
    check_node("", cfg, TopLevelSchema, strict=False)
    for key, schema in _PARTS.items():
        if OmegaConf.select(cfg, key) is not None:
            check_node(f"{key}.", cfg[key], schema, strict=True)
    setting = OmegaConf.select(cfg, "setting")
    if setting is not None:
        if "name" not in setting:
            raise ConfigError("setting", "no setting chosen (a profile only adjusts one)",
                              "add +setting=alfworld (or textworld, coding, livebench)")  # fmt: skip
        own = SETTING_SCHEMAS.get(str(setting.name))
        check_node("setting.", setting, own or SettingSchema, strict=own is not None)
    check_targets(cfg)
