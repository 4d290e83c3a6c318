"""The GPU and multinode commands resolve to the paper's hyperparameters; the CPU default keeps its own values.

The paper's values (arXiv 2602.02488, the authors' configs/<setting>_rl.yaml) are written out here once, as a table, and
each README command is composed with Hydra's compose API and checked against it, key by key (a defect found on
2026-11-24: ``_self_`` came last in train.yaml's defaults, so the CPU values silently overrode every GPU value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlanything_core.assembly.backends import judge_max_new_tokens, sampling  # noqa: E402
from rlanything_core.assembly.components import judge_loss as make_judge_loss  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.settings.coding import first  # noqa: E402

# key -> the paper's value, per setting (None: the whole split)
SHARED = {
    "optim.policy_lr": 1e-6,
    "optim.judge_lr": 1e-6,
    "optim.clip_eps_low": 0.2,
    "optim.clip_eps_high": 0.2,
    "optim.kl_coef": 0.01,
    "optim.max_grad_norm": 1.0,
    "num_votes": 3,
    "lam": 1.0,
    "judge_band": [0.2, 0.8],
    "env_band": [0.2, 0.8],
    "trainer.accelerator": "gpu",
    "trainer.devices": 8,
    "trainer.strategy": "fsdp2",
    "trainer.precision": "32-true",  # fp32 master weights and Adam states
    "fsdp.param_dtype": "bfloat16",  # bf16 compute
    "fsdp.reduce_dtype": "float32",
    "fsdp.activation_checkpointing": True,
    "eval.games": None,
    "eval.runs": 3,
    "model.temperature": 0.8,
    "model.judge_temperature": 0.8,
}
PAPER: dict[str, dict[str, Any]] = {
    "alfworld": {
        "iterations": 200,
        "tasks_per_iteration": 16,
        "group_size": 8,
        "optim.policy_updates": 4,
        "optim.judge_updates": 4,
        "setting.max_steps": 40,
        "setting.eval_max_steps": 60,
        "setting.train_split": "train",
        "setting.train_games": None,
        "eval.temperature": 0.8,
    },
    "coding": {
        "iterations": 300,
        "tasks_per_iteration": 64,
        "group_size": 32,
        "optim.policy_updates": 2,
        "optim.judge_updates": 2,
        "setting.tests_per_task": 16,
        # the coder's budget per program (rollout.policy.max_gen_length), set by the scale file: setting/coding.yaml
        # used to pin it to model.max_new_tokens after the scale was applied (2000 with qwen2.5-7b)
        "setting.max_new_tokens": 2048,
        "setting.train_problems": None,
        "setting.eval_samples": 3,
        "setting.eval_problems": None,
        "policy_band": [0.2, 0.8],
        "model.temperature": 1.0,  # coding samples programs at T=1.0 in training ...
        "eval.temperature": 0.0,  # ... and greedily in evaluation
    },
}
PAPER["livebench"] = PAPER["coding"]
NODES = {("gpu", "alfworld"): 1, ("multinode", "alfworld"): 8, ("gpu", "coding"): 1, ("multinode", "coding"): 4}


def _cfg(*overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def _expected(scale: str, setting: str) -> dict[str, Any]:
    family = "alfworld" if setting == "alfworld" else "coding"
    return {**SHARED, **PAPER[setting], "trainer.num_nodes": NODES[(scale, family)]}


@pytest.mark.parametrize("scale", ["gpu", "multinode"])
@pytest.mark.parametrize("setting", ["alfworld", "coding", "livebench"])
def test_gpu_commands_resolve_to_the_papers_hyperparameters(scale: str, setting: str) -> None:
    cfg = _cfg(f"+setting={setting}", f"scale={scale}", "model=qwen2.5-7b")
    OmegaConf.resolve(cfg)
    wrong = {
        key: (OmegaConf.select(cfg, key, default="<missing>"), want)
        for key, want in _expected(scale, setting).items()
        if OmegaConf.select(cfg, key, default="<missing>") != want
    }
    assert not wrong, f"resolved (got, paper): {wrong}"
    # what the builders make of it: nucleus 0.95 on every generation, 4000 tokens for the judge, k3 KL
    params = sampling(cfg, max_new_tokens=8, temperature=0.8)
    assert params.top_p == 0.95
    assert judge_max_new_tokens(cfg) == 4000
    judge_loss = make_judge_loss(cfg)
    assert judge_loss.kl_estimator.name == "K3" and judge_loss.kl_coef == 0.01
    assert first(list(range(10)), cfg.eval.games) == list(range(10))  # the whole split


@pytest.mark.parametrize("model", ["qwen2.5-0.5b", "qwen2.5-1.5b"])
@pytest.mark.parametrize("setting", ["alfworld", "coding", "livebench"])
def test_one_gpu_resolves_to_the_papers_hyperparameters_on_one_device(setting: str, model: str) -> None:
    """scale=1gpu: the paper's per-setting values, one FSDP2 device, LoRA off, checkpoints chosen."""
    cfg = _cfg(f"+setting={setting}", "scale=1gpu", f"model={model}")
    OmegaConf.resolve(cfg)
    expected = {**_expected("gpu", setting), "trainer.devices": 1, "trainer.num_nodes": 1}
    wrong = {
        key: (OmegaConf.select(cfg, key, default="<missing>"), want)
        for key, want in expected.items()
        if OmegaConf.select(cfg, key, default="<missing>") != want
    }
    assert not wrong, f"resolved (got, paper): {wrong}"
    assert cfg.lora.enabled is False and cfg.checkpoint.every_n_iterations is None
    assert cfg.model.architecture == f"model_configs/{model}-instruct.json"
    assert cfg.memory.gpu_gib == 80


def test_a_command_line_override_still_wins_over_the_scale() -> None:
    cfg = _cfg("+setting=alfworld", "scale=gpu", "iterations=3", "setting.max_steps=5")
    assert cfg.iterations == 3 and cfg.setting.max_steps == 5
    cfg = _cfg("+setting=coding", "scale=gpu", "model=qwen2.5-7b", "setting.max_new_tokens=1024")
    assert cfg.setting.max_new_tokens == 1024 and cfg.setting.test_max_new_tokens == 4000


# The CPU default, as it was before the defaults order changed (it must not move: the committed results use it).
CPU: dict[str, dict[str, Any]] = {
    "alfworld": {
        "setting.max_steps": 20,
        "setting.eval_max_steps": 30,
        "setting.train_games": 32,
        "setting.train_split": "valid_train",
        "policy_band": [0.125, 0.875],
    },
    "textworld": {"setting.max_steps": 10, "setting.eval_max_steps": 15},
    "coding": {
        "setting.tests_per_task": 4,
        "setting.train_problems": 16,
        "setting.eval_samples": 1,
        "setting.eval_problems": 8,
        "policy_band": [0.2, 0.8],
        "optim.judge_lr": 1e-5,  # the coding judge is an LLM writing tests: the encoder's 3e-4 breaks its format
    },
}
CPU["livebench"] = CPU["coding"]
CPU_SHARED = {
    "iterations": 12,
    "tasks_per_iteration": 4,
    "group_size": 4,
    "optim.policy_lr": 3e-4,
    "optim.judge_lr": 3e-4,
    "optim.policy_updates": 1,
    "optim.judge_updates": 1,
    "eval.games": 8,
    "eval.runs": 1,
    "eval.temperature": 1.0,
    "trainer.accelerator": "cpu",
    "trainer.devices": 1,
    "trainer.strategy": "auto",
    "trainer.precision": "32-true",
    "torch_threads": 1,
}


@pytest.mark.parametrize("setting", ["alfworld", "textworld", "coding", "livebench"])
def test_the_cpu_default_keeps_its_values(setting: str) -> None:
    cfg = _cfg(f"+setting={setting}")
    OmegaConf.resolve(cfg)
    expected = {**CPU_SHARED, **CPU[setting]}
    wrong = {k: (OmegaConf.select(cfg, k), v) for k, v in expected.items() if OmegaConf.select(cfg, k) != v}
    assert not wrong, f"resolved (got, expected): {wrong}"
    assert sampling(cfg, max_new_tokens=8, temperature=1.0).top_p == 1.0
    assert judge_max_new_tokens(cfg) == cfg.model.max_new_tokens
    if setting in ("coding", "livebench"):  # the CPU coder keeps the model's budget
        assert cfg.setting.max_new_tokens == cfg.model.max_new_tokens
        assert cfg.setting.test_max_new_tokens == cfg.model.max_new_tokens


def test_the_ablation_default_keeps_its_values() -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="ablate", overrides=["+setting=alfworld"])
    values = (cfg.iterations, cfg.optim.policy_lr, cfg.optim.policy_updates, cfg.setting.max_steps)
    assert (*values, cfg.setting.train_games) == (12, 3e-5, 4, 20, 32)  # ablate.yaml's, not train.yaml's or a scale's


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["trainer.strategy=fsdp"], "trainer.strategy"),  # the loop shards with FSDP2 only
        (["trainer.strategy=fsdp2", "trainer.precision=bf16-true"], "trainer.precision"),  # bf16 master weights
    ],
)
def test_sharded_configs_that_cannot_learn_are_refused(overrides: list[str], key: str) -> None:
    from rlanything_core.assembly.checks import validate
    from rlanything_core.config import ConfigError

    with pytest.raises(ConfigError) as err:
        validate(_cfg("+setting=textworld", *overrides))
    assert err.value.key == key


def test_fsdp2_builds_model_parallel_strategy_as_pure_data_parallelism() -> None:
    from rlanything_core.assembly.trainer import fsdp2_strategy as _fsdp2_strategy
    from rlanything_core.assembly.trainer import sharding as _sharding

    cfg = _cfg("+setting=alfworld", "scale=multinode", "model=qwen2.5-7b")
    strategy = _fsdp2_strategy(cfg)
    assert type(strategy).__name__ == "ModelParallelStrategy"
    assert (strategy._data_parallel_size, strategy._tensor_parallel_size) == (64, 1)
    assert strategy._save_distributed_checkpoint  # sharded checkpoints: nothing gathered to rank 0
    sharding = _sharding(cfg)
    assert (sharding.param_dtype, sharding.reduce_dtype, sharding.master_dtype) == (
        torch.bfloat16,
        torch.float32,
        torch.float32,
    )
    assert sharding.activation_checkpointing and _sharding(_cfg("+setting=alfworld")) is None


@pytest.mark.parametrize(
    ("env", "writer"),
    [
        ({}, True),
        ({"RANK": "0", "LOCAL_RANK": "0"}, True),
        ({"SLURM_PROCID": "5"}, False),  # srun sets no RANK: every task used to think it wrote the pool
        ({"SLURM_PROCID": "0", "LOCAL_RANK": "3"}, False),  # Lightning's spawned process in a one-task allocation
        ({"NODE_RANK": "1", "LOCAL_RANK": "0"}, False),
    ],
)
def test_the_writer_rank_comes_from_any_launchers_variables(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], writer: bool
) -> None:
    from rlanything_core.assembly.backends import RANK_VARIABLES, is_writer_rank

    for var in RANK_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert is_writer_rank() is writer


@pytest.mark.parametrize(("rank", "written"), [("0", True), ("1", False)])
def test_only_the_writer_rank_writes_config_yaml_atomically(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rank: str, written: bool
) -> None:
    """Every rank used to write config.yaml non-atomically; now only the writer rank does, via atomic_write_text."""
    from types import SimpleNamespace

    import rlanything_core.assembly.backends as backends
    import rlanything_core.files as io
    from rlanything_core.assembly.backends import RANK_VARIABLES

    for var in RANK_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setattr(backends, "load_models", lambda cfg: (None, None, SimpleNamespace(pad_token_id=0)))
    atomic: list[Path] = []
    real = io.atomic_write_text

    def recording(path: Path, text: str) -> Path:
        atomic.append(Path(path))
        return real(path, text)

    monkeypatch.setattr(io, "atomic_write_text", recording)
    cfg = OmegaConf.create({"run_dir": str(tmp_path / "run"), "seed": 0, "lr": 1e-6})
    backends.prepare(cfg)
    config = tmp_path / "run" / "config.yaml"
    assert config.exists() is written
    assert atomic == ([config.resolve()] if written else [])
    if written:
        assert OmegaConf.load(config).lr == 1e-6
