"""Every config composes and instantiates; configs that cannot work are refused before any work, naming the key."""


import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402

SETTINGS = ["alfworld", "textworld", "coding", "livebench"]
ARMS = sorted(p.stem for p in (CONF_DIR / "arm").glob("*.yaml"))
MODELS = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
SCALES = sorted(p.stem for p in (CONF_DIR / "scale").glob("*.yaml"))


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("arm", ARMS)
def test_every_setting_and_arm_composes_validates_and_builds_its_integrator(setting: str, arm: str) -> None:
    cfg = _cfg(f"+setting={setting}", f"arm={arm}")
    OmegaConf.to_container(cfg, resolve=True)
    validate(cfg)
    integrator = instantiate(cfg.arm.integrator)
    assert callable(integrator)
    assert instantiate(cfg.step_reward).lam == cfg.lam  # the top-level lam feeds the one step reward
    assert instantiate(cfg.judge_targets).drop_zero_rows is True


def test_lam_and_balance_reach_the_step_reward_and_the_judge_targets() -> None:
    cfg = _cfg("+setting=alfworld", "lam=0.5", "balance_judge_targets=true")
    validate(cfg)
    assert instantiate(cfg.step_reward).lam == 0.5 and instantiate(cfg.judge_targets).balance_outcomes is True


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("scale", SCALES)
def test_every_model_and_scale_composes(model: str, scale: str) -> None:
    cfg = _cfg("+setting=alfworld", f"model={model}", f"scale={scale}")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict) and "trainer" in resolved and "model" in resolved


def test_profiles_compose() -> None:
    cfg = _cfg("+setting=alfworld", "+profile=smoke")
    assert cfg.iterations == 2
    validate(cfg)


def test_coding_settings_compose_with_the_smoke_profile() -> None:
    for setting in ("coding", "livebench"):
        cfg = _cfg(f"+setting={setting}", "+profile=smoke")
        validate(cfg)
        assert cfg.setting.eval_problems == cfg.eval.games and cfg.setting.max_new_tokens == cfg.model.max_new_tokens
        assert list(cfg.policy_band) == [0.2, 0.8]
    assert _cfg("+setting=livebench").setting.eval_set == "livebench"


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["setting.data_dir=/no/such/dir"], "setting.data_dir"),
        (["setting.livebench_file=/no/such.jsonl"], "setting.livebench_file"),
        (["setting.train_sets=[atcoder]"], "setting.train_sets"),
        (["setting.tests_per_task=0"], "setting.tests_per_task"),
        (["arm=outcome_only", "arm.adapt_environment=true"], "arm.adapt_environment"),
    ],
)
def test_coding_configs_that_cannot_work_are_refused(overrides: list[str], key: str) -> None:
    cfg = _cfg("+setting=livebench", *overrides)
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == key


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["judge_band=[0.2,1.5]"], "judge_band"),
        (["policy_band=[0.9,0.1]"], "policy_band"),
        (["env_band=[0.5,0.5]"], "env_band"),
        (["num_votes=0"], "num_votes"),
        (["group_size=0"], "group_size"),
        (["setting.train_split=no_such_split"], "setting.train_split"),
        (["setting.task_types=[1]", "setting.eval_splits.in_distribution=valid_unseen"], None),
        (["scale=gpu"], "trainer.accelerator"),
        (["trainer.strategy=deepspeed"], "trainer.strategy"),
        (
            ["model=qwen2.5-7b", "model.policy.pretrained_model_name_or_path=/no/such/model"],
            "model.policy.pretrained_model_name_or_path",
        ),
        (["arm=policy", "arm.judge_checkpoint=/no/such.ckpt"], "arm.judge_checkpoint"),
        (["arm=outcome_only", "arm.train_judge=true"], "arm.train_judge"),
        # an integrator whose class declares needs_votes, in an arm without a judge
        (["arm=step_only", "arm.use_judge=false"], "arm.integrator"),
        (["arm=policy", "arm.use_judge=false"], "arm.integrator"),
        (["arm=outcome_only", "arm.integrator._target_=rlanything_core.advantages.StepOnlyIntegrator"],
         "arm.integrator"),
    ],
)
def test_configs_that_cannot_work_are_refused_naming_the_key(overrides: list[str], key: str | None) -> None:
    cfg = _cfg("+setting=alfworld", *overrides)
    if key is None:  # a valid narrowing: still fine
        validate(cfg)
        return
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == key
    assert "Fix:" in str(err.value)


def test_missing_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="setting"):
        validate(_cfg())
