"""The schema of train.py's config: typed dataclasses (registered in Hydra's ConfigStore) checked before any work.

Each dataclass gives the keys of one part of the config, their types (``int``, ``float``, ``bool``, Enums for closed
sets) and, in each field's ``metadata``, its range. :func:`check_schema` merges the composed config into them, so a
wrong type (``seed=abc``), a value outside a closed set (``setting.rewriter=rulez``), an unknown key in a part whose
keys are all known (``model.temprature``) or a value out of range (``optim.policy_lr=-1``, ``setting.max_steps=0``)
becomes a :class:`~config_checks.ConfigError` naming the key and the fix, before any model is built or directory is
written.

The top level is closed: a key that neither :class:`TopLevelSchema` nor any file of ``experiments/conf`` (the primary
configs and every group, all ``_global_``) defines, nor :data:`RUNTIME_KEYS`, is refused (``+no_such_key=1``:
Hydra's ``+`` adds a key even in struct mode; issue 28). A new group adds its keys by shipping its yaml there, or
calls :func:`register_top_level`. ``optim`` and ``eval`` are checked key by key; a ``setting`` or ``model`` whose
``name`` has a schema in :data:`SETTING_SCHEMAS` / :data:`MODEL_SCHEMAS` is checked strictly (every key known), any
other by the shared keys of :class:`SettingSchema` / :class:`ModelSchema` only. A new setting or model adds its
dataclass there (or calls :func:`register_setting` / :func:`register_model` from its own module). Cross-key and
filesystem checks (bands, data folders, the judge arm) stay in ``config_checks.py``, ``_target_`` nodes are checked
by ``config_targets.py``.

Why not the schema as the first entry of ``train.yaml``'s defaults list (Hydra then checks types while composing):
that makes the whole config a structured one, closed to keys the schema does not name, so every setting, model and
``+profile`` would need its dataclass before it could compose at all, and Hydra's error names the merge, not the fix.
The explicit merge keeps the same dataclasses and checks them after composition, each with its own strictness.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from experiments.config_error import ConfigError
from experiments.config_targets import check_targets

__all__ = [
    "CONF_DIR",
    "MODEL_SCHEMAS",
    "RUNTIME_KEYS",
    "SETTING_SCHEMAS",
    "ActionSelection",
    "AlfworldSetting",
    "CodePrefill",
    "CodingSet",
    "CodingSetting",
    "EvalSchema",
    "EvalSet",
    "JudgeVotes",
    "ModelSchema",
    "OptimSchema",
    "Rewriter",
    "SettingSchema",
    "TextworldSetting",
    "TopLevelSchema",
    "check_schema",
    "register_model",
    "register_setting",
    "register_top_level",
    "top_level_keys",
]

CONF_DIR = Path(__file__).resolve().parent / "conf"
"""The shipped configs: every top-level key one of them defines is a known key."""
RUNTIME_KEYS: set[str] = {"hydra", "seed_worker", "warm_start_seed"}
"""Top-level keys no shipped file defines: Hydra's own node and those ablate.py adds on its workers' command lines."""


def _range(*, ge: float | None = None, gt: float | None = None, lt: float | None = None) -> dict[str, float]:
    return {k: v for k, v in (("ge", ge), ("gt", gt), ("lt", lt)) if v is not None}


def _f(default: Any = dataclasses.MISSING, **bounds: float) -> Any:
    """A field with a default (``MISSING``: required) and range ``bounds`` (``ge``, ``gt``, ``lt``)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=_range(**bounds))
    return field(default=default, metadata=_range(**bounds))


class Rewriter(Enum):
    """How ALFWorld tasks are rewritten: the rule-based goal swap, or the environment LM proposing it."""

    rules = "rules"
    llm = "llm"


class CodePrefill(Enum):
    """How the coder's response begins (``rlanything_core.collect.prefill``)."""

    none = "none"
    fence = "fence"
    starter = "starter"


class CodingSet(Enum):
    """A training set of the coding settings (``setting.train_sets``)."""

    kickstart = "kickstart"
    codecontests = "codecontests"


class EvalSet(Enum):
    """The evaluation set of the coding settings (``setting.eval_set``)."""

    leetcode_lcb = "leetcode_lcb"
    livebench = "livebench"


class ActionSelection(Enum):
    """How the policy picks an admissible action."""

    likelihood = "likelihood"
    boxed = "boxed"
    scorer = "scorer"  # an encoder scorer over the admissible commands (model=minilm-scorer)


class JudgeVotes(Enum):
    """How the judge votes on a step."""

    scored = "scored"
    generative = "generative"
    encoder = "encoder"  # the encoder judge's P(+1) head (model=minilm-scorer)


@dataclass
class OptimSchema:
    """``optim.*``."""

    policy_lr: float = _f(3e-4, gt=0)
    judge_lr: float = _f(3e-4, gt=0)
    policy_updates: int = _f(1, ge=1)
    judge_updates: int = _f(1, ge=1)
    policy_epochs: int = _f(1, ge=1)  # passes over an iteration's rows (PPO epochs), each of policy_updates steps
    judge_epochs: int = _f(1, ge=1)
    micro_batch_tokens: int = _f(8192, ge=1)
    max_grad_norm: float = _f(1.0, gt=0)
    clip_eps_low: float = _f(0.2, ge=0, lt=1)
    clip_eps_high: float = _f(0.2, ge=0)
    kl_coef: float = _f(0.01, ge=0)
    # Hydra ``_target_`` nodes (their keys are checked against the target's signature)
    policy_loss: Any = None
    judge_loss: Any = None
    policy_optimizer: Any = None
    judge_optimizer: Any = None


@dataclass
class EvalSchema:
    """``eval.*``."""

    every: int = _f(0, ge=0)
    at_start: bool = True
    games: int | None = _f(8, ge=1)  # null: every game of each evaluation split (the GPU scale)
    runs: int = _f(1, ge=1)
    oracle_episodes: int = _f(4, ge=0)
    temperature: float = _f(1.0, gt=0)
    seed: int = 4242  # seeds the judge's probe set (and, without per_seed_episodes, the evaluation episodes)
    per_seed_episodes: bool = True  # the episodes' seed also depends on the training seed (paired within a seed)
    sample_seed: int = 0  # which games the stratified evaluation sample holds
    judge_every: int = _f(0, ge=0)  # judge-only probes every k iterations (0: never)
    judge_episodes: int | None = _f(None, ge=1)  # episodes per split the judge votes on (None: all)
    probe_file: str | None = None  # the planner-labelled probe steps: read if present, else labelled and saved


@dataclass
class TopLevelSchema:
    """The shared top-level keys of train.yaml (other top-level keys belong to their own groups)."""

    seed: int = 0
    run_dir: str = "runs"
    resume: bool = True
    iterations: int = _f(12, ge=1)
    tasks_per_iteration: int = _f(4, ge=1)
    group_size: int = _f(4, ge=1)
    num_votes: int = _f(3, ge=0)  # >= 1 when the arm uses the judge (config_checks)
    lam: float = _f(1.0, ge=0)
    balance_judge_targets: bool = False  # won and failed steps weigh the same in the judge's targets (issue 27)
    policy_band: list[float] = _f([0.125, 0.875])
    judge_band: list[float] = _f([0.2, 0.8])
    env_band: list[float] = _f([0.2, 0.8])
    max_rewrites_per_iteration: int = _f(4, ge=0)
    progress: bool = True
    eval_only: bool = False


@dataclass
class SettingSchema:
    """Keys every setting may have (the profiles set the optional ones for whichever setting is chosen)."""

    name: str = dataclasses.MISSING  # type: ignore[assignment]
    parts: Any = None  # the Setting's Hydra node (experiments/setting.py), its keys checked against its target
    train_games: int | None = _f(None, ge=1)
    max_steps: int | None = _f(None, ge=1)
    eval_max_steps: int | None = _f(None, ge=1)
    env_workers: int | None = _f(None, ge=1)
    test_max_new_tokens: int | None = _f(None, ge=1)  # the smoke profile sets it for any setting (coding reads it)


@dataclass
class _AgentSetting(SettingSchema):
    max_history_turns: int = _f(2, ge=0)


@dataclass
class AlfworldSetting(_AgentSetting):
    """``setting=alfworld``."""

    data_root: str | None = None
    train_split: str = "valid_train"
    train_sample_seed: int = _f(0, ge=0)  # which training games the stratified pool draws (issue 27)
    task_types: list[int] = _f([1, 2, 3, 4, 5, 6])
    eval_splits: dict[str, str] = field(default_factory=dict)
    rewriter: Rewriter = Rewriter.rules


@dataclass
class TextworldSetting(_AgentSetting):
    """``setting=textworld``."""

    nb_objects: int = _f(4, ge=1)
    train_quest_lengths: list[int] = _f([1, 2, 3])
    train_rooms: list[int] = _f([1, 2])
    seeds_per_cell: int = _f(1, ge=1)
    eval_quest_lengths: list[int] = _f([1, 3, 5])
    eval_rooms: int = _f(3, ge=1)
    cache_dir: str | None = None


@dataclass
class CodingSetting(SettingSchema):
    """``setting=coding`` and ``setting=livebench``."""

    data_dir: str | None = None
    train_sets: list[CodingSet] = _f(["kickstart", "codecontests"])
    train_problems: int | None = _f(16, ge=1)
    max_statement_chars: int = _f(6000, ge=1)
    gt_tests: int = _f(8, ge=1)
    eval_set: EvalSet = EvalSet.leetcode_lcb
    livebench_file: str | None = None
    eval_problems: int | None = _f(8, ge=1)  # null: every evaluation problem (the GPU scale)
    eval_samples: int = _f(1, ge=1)
    eval_tests_per_task: int = _f(4, ge=1)
    max_new_tokens: int = _f(64, ge=1)
    tests_per_task: int = _f(4, ge=1)
    test_temperature: float = _f(0.8, gt=0)
    code_prefill: CodePrefill = CodePrefill.starter
    test_scaffold: bool = True
    test_format_without_reference: bool = True
    sandbox_workers: int = _f(2, ge=1)
    rewriter_samples: int = _f(3, ge=1)
    rewriter_max_new_tokens: int = _f(64, ge=1)


@dataclass
class ModelSchema:
    """``model.*`` (``policy`` / ``judge`` are Hydra ``_target_`` nodes, checked against their target's signature)."""

    name: str = dataclasses.MISSING  # type: ignore[assignment]
    policy_init: str | None = None
    policy: Any = None
    judge: Any = None
    tokenizer: Any = None
    action_selection: ActionSelection = ActionSelection.likelihood
    judge_votes: JudgeVotes = JudgeVotes.scored
    temperature: float = _f(1.0, gt=0)
    judge_temperature: float = _f(1.0, gt=0)
    max_new_tokens: int = _f(64, ge=1)
    batch_size: int = _f(16, ge=1)
    architecture: str | None = None  # a transformers config.json (meta-device memory plans, no hub)
    judge_max_new_tokens: int | None = _f(None, ge=1)  # the judge's generation budget (None: max_new_tokens)
    top_p: float = _f(1.0, gt=0)


SETTING_SCHEMAS: dict[str, type] = {
    "alfworld": AlfworldSetting,
    "textworld": TextworldSetting,
    "coding": CodingSetting,
    "livebench": CodingSetting,
}
"""Settings checked strictly (every key known); other setting names get the shared keys checked."""

MODEL_SCHEMAS: dict[str, type] = {
    name: ModelSchema
    for name in ("tiny", "minilm-scorer", "smollm2-135m", "qwen2.5-7b", "qwen2.5-vl-7b", "qwen3-vl-8b")
}
"""Models checked strictly; other model names get the shared keys of :class:`ModelSchema` checked."""


def _store() -> None:
    store = ConfigStore.instance()
    store.store(group="schema", name="top_level", node=TopLevelSchema)
    store.store(group="schema", name="optim", node=OptimSchema)
    store.store(group="schema", name="eval", node=EvalSchema)
    for name, schema in SETTING_SCHEMAS.items():
        store.store(group="schema/setting", name=name, node=schema)
    for name, schema in MODEL_SCHEMAS.items():
        store.store(group="schema/model", name=name, node=schema)


def register_setting(name: str, schema: type) -> None:
    """Check ``setting.name == name`` configs strictly against the dataclass ``schema`` (a ``SettingSchema``)."""
    SETTING_SCHEMAS[name] = schema
    ConfigStore.instance().store(group="schema/setting", name=name, node=schema)


def register_model(name: str, schema: type) -> None:
    """Check ``model.name == name`` configs strictly against the dataclass ``schema`` (a ``ModelSchema``)."""
    MODEL_SCHEMAS[name] = schema
    ConfigStore.instance().store(group="schema/model", name=name, node=schema)


_store()


def register_top_level(name: str) -> None:
    """Accept the top-level key ``name`` (a group shipped outside ``experiments/conf``)."""
    RUNTIME_KEYS.add(name)


@functools.lru_cache(maxsize=4)
def _file_keys(conf_dir: Path) -> frozenset[str]:
    keys: set[str] = set()
    for path in sorted(conf_dir.rglob("*.yaml")):
        node = OmegaConf.load(path)
        if isinstance(node, DictConfig):
            keys.update(str(k) for k in node if k != "defaults")
    return frozenset(keys)


def top_level_keys(conf_dir: Path = CONF_DIR) -> frozenset[str]:
    """Every known top-level key: :class:`TopLevelSchema`'s, the shipped files' and :data:`RUNTIME_KEYS`."""
    return frozenset({f.name for f in dataclasses.fields(TopLevelSchema)} | _file_keys(conf_dir) | RUNTIME_KEYS)


def _check_top_level(cfg: DictConfig) -> None:
    known = top_level_keys()
    for item in cfg:
        key = str(item)
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise ConfigError(
                key,
                "unknown top-level key (no config file or schema defines it)",
                f"{hint}remove +{key}=... or use one of {sorted(known)}",
            )


def _fix(schema: type, name: str) -> str:
    spec = {f.name: f for f in dataclasses.fields(schema)}.get(name)
    if spec is None:
        return f"use one of {sorted(f.name for f in dataclasses.fields(schema))} (a typo?)"
    if isinstance(spec.type, type) and issubclass(spec.type, Enum):
        return f"use one of {[m.value for m in spec.type]}"
    enums = (Rewriter, ActionSelection, JudgeVotes, CodingSet, EvalSet, CodePrefill)
    enum = next((m for m in enums if m.__name__ in str(spec.type)), None)
    if enum is not None:
        return f"use one of {[m.value for m in enum]}"
    bounds = ", ".join(f"{'>=' if k == 'ge' else '>' if k == 'gt' else '<'} {v}" for k, v in spec.metadata.items())
    return f"give a value of type {spec.type}" + (f" ({bounds})" if bounds else "")


def _check_node(prefix: str, node: Any, schema: type, *, strict: bool) -> None:
    """Merge ``node`` into ``schema`` (types, Enums, unknown keys when ``strict``), then check the ranges."""
    if not isinstance(node, DictConfig):
        raise ConfigError(prefix.rstrip("."), f"expected a group of keys, got {node!r}", "see experiments/conf/")
    names = {f.name for f in dataclasses.fields(schema)}
    raw = OmegaConf.to_container(node, resolve=False)
    assert isinstance(raw, dict)
    if not strict:
        raw = {k: v for k, v in raw.items() if k in names}
    for key, value in raw.items():
        key = str(key)
        if key not in names:
            raise ConfigError(f"{prefix}{key}", "unknown key", _fix(schema, str(key)))
        try:
            OmegaConf.merge(OmegaConf.structured(schema), {key: value})
        except (ValidationError, ConfigKeyError) as err:
            problem = str(err).splitlines()[0]
            raise ConfigError(f"{prefix}{key}", problem, _fix(schema, str(key))) from None
    for spec in dataclasses.fields(schema):
        if spec.name not in raw:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{prefix}{spec.name}", "missing", f"set {prefix}{spec.name}")
            continue
        if not spec.metadata or OmegaConf.is_interpolation(node, spec.name):
            continue  # an interpolation is range-checked at the key it points to
        try:
            value = node[spec.name]  # resolved now: the types above passed
        except OmegaConfBaseException as err:
            raise ConfigError(f"{prefix}{spec.name}", f"cannot be resolved ({err})", "fix the interpolation") from None
        if value is None:
            continue
        number = float(value)
        bounds = spec.metadata
        ok = math.isfinite(number) and all(
            (k != "ge" or number >= v) and (k != "gt" or number > v) and (k != "lt" or number < v)
            for k, v in bounds.items()
        )
        if not ok:
            raise ConfigError(f"{prefix}{spec.name}", f"out of range: {value!r}", _fix(schema, spec.name))


def check_schema(cfg: DictConfig) -> None:
    """Check ``cfg`` against the schema (see the module docstring); raises :class:`ConfigError` on the first fault."""
    _check_top_level(cfg)
    _check_node("", cfg, TopLevelSchema, strict=False)
    for key, group in (("optim", OptimSchema), ("eval", EvalSchema)):
        if OmegaConf.select(cfg, key) is not None:
            _check_node(f"{key}.", cfg[key], group, strict=True)
    setting = OmegaConf.select(cfg, "setting")
    if setting is not None:
        if "name" not in setting:
            raise ConfigError(
                "setting",
                "no setting chosen (a profile only adjusts one)",
                "add +setting=alfworld (or textworld, coding, livebench)",
            )
        name = str(setting["name"])
        schema = SETTING_SCHEMAS.get(name)
        _check_node("setting.", setting, schema or SettingSchema, strict=schema is not None)
    model = OmegaConf.select(cfg, "model")
    if model is not None:
        name = str(model.get("name", ""))
        schema = MODEL_SCHEMAS.get(name)
        _check_node("model.", model, schema or ModelSchema, strict=schema is not None)
    check_targets(cfg)
