"""Keys the coding setting does not read are refused by name at any other value (CODING_FIXED_KEYS), and every arm
runs coding's own integrator; the committed coding configs still validate."""


import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.assembly.coding import CODING_FIXED_KEYS  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402
from rlanything_core.config.fixed import refuse_changed  # noqa: E402
from rlanything_core.rewards.pass_fraction import PassFractionIntegrator  # noqa: E402

ARMS = sorted(p.stem for p in (CONF_DIR / "arm").glob("*.yaml"))
SCALES = sorted(p.stem for p in (CONF_DIR / "scale").glob("*.yaml"))
INTEGRATORS = "rlanything_core.advantages.integrators"
PROFILES = ["full", "smoke"]  # profile=hard narrows ALFWorld's task types: not a coding profile


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.mark.parametrize("setting", ["coding", "livebench"])
@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_runs_the_pass_fraction_integrator(setting: str, arm: str) -> None:
    cfg = _cfg(f"+setting={setting}", f"arm={arm}", "+profile=smoke")
    validate(cfg)
    integrator = instantiate(cfg.arm.integrator)
    assert isinstance(integrator, PassFractionIntegrator) and integrator.eps == 1.0e-8


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_validates_with_coding(profile: str) -> None:
    validate(_cfg("+setting=coding", f"+profile={profile}"))


@pytest.mark.parametrize(
    ("override", "key"),
    [
        (f"arm.integrator._target_={INTEGRATORS}.IntegratedIntegrator", "arm.integrator._target_"),
        (f"arm.integrator._target_={INTEGRATORS}.OutcomeOnlyIntegrator", "arm.integrator._target_"),
        ("lam=0.5", "lam"),
        ("step_reward.lam=0.0", "step_reward"),
        ("num_votes=5", "num_votes"),
        ("judge_band=[0.1,0.9]", "judge_band"),
    ],
)
@pytest.mark.parametrize("setting", ["coding", "livebench"])
def test_a_key_coding_does_not_read_is_refused_by_name(setting: str, override: str, key: str) -> None:
    cfg = _cfg(f"+setting={setting}", override)
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == key
    assert f"would do nothing in the {setting} setting" in str(err.value) and "Fix: leave" in str(err.value)


def test_another_judge_targets_class_is_refused_by_name() -> None:
    """A class with ConsistencyTargets' arguments would pass the schema; coding reads only its three values."""
    cfg = _cfg("+setting=coding")
    OmegaConf.update(cfg, "judge_targets._target_", "my.package.MyConsistencyTargets")
    with pytest.raises(ConfigError, match="config key 'judge_targets._target_': .* always scores unit tests"):
        refuse_changed(cfg, CODING_FIXED_KEYS, "coding")


def test_the_same_keys_are_read_by_the_agent_settings() -> None:
    """The refusals are the coding setting's data, not global: ALFWorld takes every one of these values."""
    validate(_cfg("+setting=alfworld", "lam=0.5", "num_votes=5", "judge_band=[0.1,0.9]"))


def test_the_fixed_keys_hold_the_shared_defaults() -> None:
    """Each fixed value is what a plain coding config resolves to: only a change is refused."""
    cfg = _cfg("+setting=coding")
    for fixed in CODING_FIXED_KEYS:
        node = OmegaConf.select(cfg, fixed.key)
        value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        assert value == fixed.value, fixed.key
