"""The config schema refuses bad keys and values before any work, naming the key and the fix."""

import os
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from rlanything_core.conf import CONF_DIR
from rlanything_core.testing.processes import run_reaped

REPO = Path(__file__).resolve().parents[2]

from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.assembly.schema import SETTING_SCHEMAS, SettingSchema, register_setting  # noqa: E402
from rlanything_core.config import ConfigError  # noqa: E402


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def _refused(*overrides: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        validate(_cfg(*overrides))
    assert "Fix:" in str(err.value)
    return err.value


@pytest.mark.parametrize(
    ("overrides", "key", "fix"),
    [
        (["+setting=alfworld", "setting.rewriter=rulez"], "setting.rewriter", "['rules', 'llm']"),
        (["+setting=alfworld", "optim.policy_lr=-1"], "optim.policy_lr", "> 0"),
        (["+setting=alfworld", "optim.judge_lr=nan"], "optim.judge_lr", "> 0"),
        (["+setting=alfworld", "setting.max_steps=0"], "setting.max_steps", ">= 1"),
        (["+setting=textworld", "setting.max_steps=0"], "setting.max_steps", ">= 1"),
        (["+setting=alfworld", "seed=abc"], "seed", "int"),
        (["+setting=alfworld", "iterations=two"], "iterations", "int"),
        (["+setting=alfworld", "lam=-1"], "lam", ">= 0"),
        (["+setting=alfworld", "+model.temprature=2"], "model.temprature", "temperature"),
        (["+setting=alfworld", "+model.policy.trainable_layrs=1"], "model.policy.trainable_layrs", "trainable_layers"),
        (["+setting=alfworld", "model=tiny", "+model.policy.hiden=32"], "model.policy.hiden", "hidden"),
        (["+setting=alfworld", "model.action_selection=greedy"], "model.action_selection", "likelihood"),
        (["+setting=alfworld", "model.temperature=0"], "model.temperature", "> 0"),
        (["+setting=alfworld", "+optim.lr=1"], "optim.lr", "policy_lr"),
        (["+setting=alfworld", "eval.at_start=maybe"], "eval.at_start", "bool"),
        (["+setting=alfworld", "+eval.oracle_deadline_s=0"], "eval.oracle_deadline_s", "> 0"),
        (["+setting=alfworld", "+setting.max_step=3"], "setting.max_step", "max_steps"),
        (["+setting=livebench", "setting.tests_per_task=0"], "setting.tests_per_task", ">= 1"),
        (["+profile=smoke"], "setting", "+setting=alfworld"),
        (
            ["+setting=alfworld", "optim.policy_loss.kl_reference._args_=[frozen]"],
            "optim.policy_loss.kl_reference",
            "rollout",
        ),
    ],
)
def test_bad_keys_and_values_are_refused_naming_the_key_and_fix(overrides: list[str], key: str, fix: str) -> None:
    err = _refused(*overrides)
    assert err.key == key
    assert fix in str(err).split("Fix:")[1]


@pytest.mark.parametrize(
    ("overrides", "key", "fix"),
    [
        (["+setting=alfworld", "+no_such_key=1"], "no_such_key", "remove +no_such_key"),
        (["+setting=alfworld", "+iteration=3"], "iteration", "did you mean iterations"),
        (
            ["+setting=coding", "optim.policy_loss.kl_estimator._target_=no.such.Estimator"],
            "optim.policy_loss.kl_estimator._target_",
            "importable dotted path",
        ),
        (
            ["+setting=alfworld", "arm.integrator._target_=rlanything_core.nothing_here"],
            "arm.integrator._target_",
            "importable dotted path",
        ),
        (
            ["+setting=alfworld", "+selectors.boxed.sampling.max_new_tokenz=3"],
            "selectors.boxed.sampling.max_new_tokenz",
            "max_new_tokens",
        ),
    ],
)
def test_unknown_top_level_keys_and_bad_targets_are_refused_naming_the_key(
    overrides: list[str], key: str, fix: str
) -> None:
    """Old behaviour: ``+no_such_key=1`` was accepted silently (the top level was checked by known keys only), and a
    nested node's ``_target_`` was not checked: Hydra's instantiate error at build time named no config key."""
    err = _refused(*overrides)
    assert err.key == key
    assert fix in str(err).split("Fix:")[1]


def test_every_shipped_top_level_key_is_known() -> None:
    from rlanything_core.assembly.schema import top_level_keys

    known = top_level_keys()
    assert {"setting", "model", "arm", "optim", "eval", "trainer", "stats", "budget", "seeds", "hydra"} <= known
    assert "no_such_key" not in known


def test_an_explicit_alfworld_data_folder_that_does_not_exist_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALFWORLD_DATA", "/nonexistent")
    err = _refused("+setting=alfworld")
    assert err.key == "ALFWORLD_DATA" and "/nonexistent" in str(err)


def test_every_shipped_setting_and_model_passes_the_schema() -> None:
    for setting in ("alfworld", "textworld", "coding", "livebench"):
        for model in sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml")):
            from rlanything_core.assembly.schema import check_schema

            check_schema(_cfg(f"+setting={setting}", f"model={model}", "+profile=smoke"))


def test_the_schema_is_in_the_config_store() -> None:
    repo = ConfigStore.instance().repo
    assert {"top_level.yaml", "optim.yaml", "eval.yaml"} <= set(repo["schema"])
    assert "alfworld.yaml" in repo["schema"]["setting"]


def test_an_unknown_setting_gets_its_shared_keys_checked_and_can_register_a_schema() -> None:
    from dataclasses import dataclass

    from rlanything_core.assembly.schema import check_schema

    cfg = _cfg("+setting=textworld")
    OmegaConf.set_struct(cfg, False)
    cfg.setting.name = "newsetting"  # a setting this schema does not know: its own keys pass
    cfg.setting.something_new = 3
    check_schema(cfg)

    @dataclass
    class NewSetting(SettingSchema):
        something_new: int = 1

    try:
        register_setting("newsetting", NewSetting)
        cfg.setting.max_steps = 5
        with pytest.raises(ConfigError) as err:
            check_schema(cfg)  # now strict: the textworld keys are unknown to NewSetting
        assert err.value.key.startswith("setting.")
    finally:
        SETTING_SCHEMAS.pop("newsetting")


@pytest.mark.slow
def test_train_refuses_before_writing_anything(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for override in ("optim.policy_lr=-1", "setting.rewriter=rulez", "seed=abc"):
        proc = run_reaped(
            [sys.executable, "-m", "experiments.train", "+setting=alfworld", override, f"run_dir={run_dir}"],
            cwd=REPO,
            env=env,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "ERROR: config key" in proc.stderr and "Traceback" not in proc.stderr
        assert not run_dir.exists()
