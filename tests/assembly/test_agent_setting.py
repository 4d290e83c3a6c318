"""The agent settings on the one builder (``rlanything_core/assembly/agent.py``): the setting's own parts
(``rlanything_core.settings``) built from the yaml's keys, its checks naming the config key, its rewriter given what it
asks of the run, and anything that is no ``AgentTasks`` refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from rlanything_core.adaptation.rewriters.alfworld_llm import AlfworldLLMRewriter  # noqa: E402
from rlanything_core.adaptation.rewriters.alfworld_rules import AlfworldRuleRewriter  # noqa: E402
from rlanything_core.adaptation.rewriters.textworld import TextWorldRewriter  # noqa: E402
from rlanything_core.assembly.agent import agent_rewriter, agent_setting  # noqa: E402
from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.assembly.setting import config_key  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402
from rlanything_core.loop.oracle_labels import StoredLabels
from rlanything_core.settings.alfworld import AlfworldTasks, alfworld_oracle  # noqa: E402
from rlanything_core.settings.textworld import TextWorldTasks  # noqa: E402


def _cfg(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_the_setting_keys_reach_the_parts_as_plain_values() -> None:
    env = validate(_cfg("+setting=alfworld", "+profile=smoke", "setting.train_sample_seed=3")).environment
    assert env == AlfworldTasks(
        data_root=None, train_split="valid_train", task_types=[1, 2, 3, 4, 5, 6], train_games=2, train_sample_seed=3,
        eval_splits={"in_distribution": "valid_seen", "out_of_distribution": "valid_unseen"}, eval_games=2,
        eval_sample_seed=0,
    )  # fmt: skip
    stored = validate(_cfg("+setting=alfworld")).environment.step_oracle()  # the planner, its labels kept on disk
    assert isinstance(stored, StoredLabels) and stored.oracle is alfworld_oracle
    planner = validate(_cfg("+setting=alfworld", "+setting.parts.environment.label_store=false")).environment
    assert planner.step_oracle() is alfworld_oracle
    tw = validate(_cfg("+setting=textworld", "setting.eval_rooms=2", "eval.games=3")).environment
    assert isinstance(tw, TextWorldTasks) and tw.eval_rooms == 2 and tw.eval_games == 3
    assert tw.step_oracle() is None


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["setting.train_split=no_such_split"], "setting.train_split"),
        (["setting.eval_splits.in_distribution=nope"], "setting.eval_splits.in_distribution"),
        (["setting.train_split=valid_seen", "setting.train_games=100", "eval.games=64"], "setting.train_games"),
        (["setting.data_root=/no/such/folder"], "setting.data_root"),
    ],
)
def test_a_setting_check_names_the_config_key_behind_the_parameter(overrides: list[str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(_cfg("+setting=alfworld", *overrides))
    assert err.value.key == key and "Fix:" in str(err.value)


def test_textworld_refuses_an_evaluation_without_a_number_of_games() -> None:
    with pytest.raises(ConfigError, match="generates its evaluation games") as err:
        validate(_cfg("+setting=textworld", "eval.games=null"))
    assert err.value.key == "eval.games"


def test_a_parameter_without_an_interpolation_is_named_in_the_parts_and_others_stay() -> None:
    cfg = _cfg("+setting=alfworld", "setting.parts.environment.train_sample_seed=5")
    assert config_key(cfg, "train_sample_seed") == "setting.parts.environment.train_sample_seed"
    assert config_key(cfg, "train_games") == "setting.train_games"  # ${oc.select:setting.train_games,null}
    assert config_key(cfg, "ALFWORLD_DATA") == "ALFWORLD_DATA"


def test_parts_that_are_no_agent_tasks_are_refused() -> None:
    with pytest.raises(ConfigError, match="built a dict, not an AgentTasks") as err:
        agent_setting({"roots": []}, rewriter="rules")  # type: ignore[arg-type]
    assert err.value.key == "setting.parts.environment"


def test_the_rewriter_gets_what_it_asks_of_the_run(tmp_path: Path) -> None:
    cfg = _cfg("+setting=alfworld")
    rules = agent_rewriter(cfg, tmp_path, None, [], name="rules")
    assert isinstance(rules, AlfworldRuleRewriter) and rules.out_dir == tmp_path / "candidates"
    assert isinstance(agent_rewriter(cfg, tmp_path, None, [], name="textworld"), TextWorldRewriter)
    with pytest.raises(ConfigError, match="'llm' rewriter uses the judge's model") as err:
        agent_rewriter(cfg, tmp_path, None, [], name="llm")  # no judge: nothing can propose
    assert err.value.key == "setting.rewriter"
    llm = agent_rewriter(cfg, tmp_path, object(), [], name="llm")
    assert isinstance(llm, AlfworldLLMRewriter) and llm.out_dir == tmp_path / "candidates"
    with pytest.raises(ConfigError, match="unknown 'rulez'") as err:
        agent_rewriter(cfg, tmp_path, None, [], name="rulez")
    assert err.value.key == "setting.rewriter"


def test_the_wiring_checks_the_rewriter_and_the_workers_before_any_work() -> None:
    # an arm that adapts the environment without a judge: nothing can run the LM rewriter
    cfg = _cfg("+setting=alfworld", "setting.rewriter=llm", "arm=outcome_only", "arm.adapt_environment=true")
    with pytest.raises(ConfigError, match="'llm' rewriter uses the judge's model") as err:
        validate(cfg)
    assert err.value.key == "setting.rewriter"
    validate(_cfg("+setting=alfworld", "setting.rewriter=llm", "arm=full"))  # with the judge: fine
    with pytest.raises(ConfigError, match="unknown 'rulez'") as err:  # (ALFWorld's schema refuses it even sooner)
        validate(_cfg("+setting=textworld", "setting.parts.rewriter=rulez"))
    assert err.value.key == "setting.rewriter"
    with pytest.raises(ConfigError, match="desktop episodes share what runs in this process") as err:
        validate(_cfg("+setting=desktop", "setting.env_workers=2"))  # its displays live in this process
    assert err.value.key == "setting.env_workers"
