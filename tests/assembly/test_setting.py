"""Settings as data (``rlanything_core/assembly/setting.py``): every shipped setting builds its parts from
``setting.parts``; a setting refuses, by name, a backend it does not run on; missing or wrong parts are refused naming
the key."""

from __future__ import annotations

import re

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, open_dict

from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.assembly.setting import BACKENDS, Setting, check_setting, load_setting  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402

SETTINGS = sorted(p.stem for p in (CONF_DIR / "setting").glob("*.yaml"))


def _cfg(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_the_shipped_settings_are_the_six_of_the_paper_and_this_repository() -> None:
    assert SETTINGS == ["alfworld", "coding", "desktop", "livebench", "miniwob", "textworld"]


@pytest.mark.parametrize("name", SETTINGS)
def test_every_setting_builds_its_parts_from_its_yaml(name: str) -> None:
    setting = load_setting(_cfg(f"+setting={name}"))
    assert isinstance(setting, Setting)
    for part in (setting.tasks, setting.rewriter, setting.loop, setting.agent_prompts, setting.judge_prompts):
        assert callable(part)
    assert set(setting.backends) <= set(BACKENDS) and "transformers" in setting.backends


def test_the_text_settings_keep_the_text_prompts_and_the_gui_setting_has_its_own() -> None:
    from rlanything_core.collect.gui_prompts import gui_agent_messages
    from rlanything_core.collect.prompts import agent_messages

    assert load_setting(_cfg("+setting=alfworld")).agent_prompts is agent_messages
    assert load_setting(_cfg("+setting=miniwob")).agent_prompts.func is gui_agent_messages  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["miniwob", "desktop"])
def test_a_gui_setting_refuses_the_vllm_backend_by_name(name: str) -> None:
    cfg = _cfg(f"+setting={name}", "backend=vllm")
    with pytest.raises(ConfigError, match=re.escape(f"setting '{name}' runs its rollouts on ['transformers'] only")):
        validate(cfg)
    with pytest.raises(ConfigError) as err:
        check_setting(cfg)
    assert err.value.key == "backend" and "drop backend=vllm" in str(err.value)


def test_a_text_setting_accepts_the_vllm_backend() -> None:
    setting = check_setting(_cfg("+setting=textworld", "backend=vllm"))
    assert "vllm" in setting.backends


def test_a_setting_without_parts_is_refused_naming_the_key() -> None:
    cfg = _cfg("+setting=textworld")
    with open_dict(cfg):
        del cfg.setting["parts"]
    with pytest.raises(ConfigError, match="names no parts") as err:
        validate(cfg)
    assert err.value.key == "setting.parts"


def test_parts_that_build_no_setting_are_refused() -> None:
    cfg = _cfg("+setting=textworld", "setting.parts._target_=builtins.dict")
    with pytest.raises(ConfigError) as err:
        load_setting(cfg)
    assert err.value.key == "setting.parts._target_" and "built a dict, not a Setting" in str(err.value)
    cfg = _cfg("+setting=textworld", "setting.parts._target_=rlanything_core.assembly.setting.Tasks")  # other signature
    with pytest.raises(ConfigError, match="unexpected keyword argument 'rewriter'") as err:
        load_setting(cfg)
    assert err.value.key == "setting.parts"


def test_a_typo_in_the_parts_is_refused_naming_it() -> None:
    cfg = _cfg("+setting=textworld", "+setting.parts.rewritter=x")
    with pytest.raises(ConfigError, match="not a parameter of rlanything_core.assembly.agent.agent_setting") as err:
        validate(cfg)
    assert err.value.key == "setting.parts.rewritter"
    cfg = _cfg("+setting=alfworld", "+setting.parts.environment.train_game=3")  # the setting's own parts too
    with pytest.raises(ConfigError, match="not a parameter of rlanything_core.settings.alfworld.AlfworldTasks") as err:
        validate(cfg)
    assert err.value.key == "setting.parts.environment.train_game"
