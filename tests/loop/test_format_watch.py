"""The warning when the judge's unit tests stop parsing (more than half), and the coding judge's CPU learning rate."""

from __future__ import annotations

import pytest

from rlanything_core.loop.format_watch import JudgeFormatWarning, format_warning, warn_format_failures


def test_over_half_unparsed_warns_naming_the_fix() -> None:
    assert format_warning(0.5, where="x") is None and format_warning(0.0, where="x") is None
    message = format_warning(0.625, where="training iteration 3")
    assert message is not None and message.startswith("training iteration 3: 62% of the judge's unit tests")
    assert "optim.judge_lr" in message


def test_every_format_rate_of_the_metrics_is_watched() -> None:
    metrics = {"in_distribution/test_format_failure_rate": 1.0, "test_format_failure_rate": 0.25, "ut": 0.9}
    with pytest.warns(JudgeFormatWarning, match=r"evaluation \(in_distribution/test_format_failure_rate\): 100%"):
        messages = warn_format_failures(metrics, where="evaluation")
    assert len(messages) == 1


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_a_rate_outside_zero_one_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="rate: expected a share in"):
        format_warning(rate, where="x")


def test_the_coding_judge_at_cpu_scale_trains_at_an_llm_learning_rate() -> None:
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for setting in ("coding", "livebench"):
            cfg = compose(config_name="train", overrides=[f"+setting={setting}", "model=smollm2-135m"])
            assert cfg.optim.judge_lr <= 1e-5, setting
            ablation = compose(config_name="ablate", overrides=[f"+setting={setting}", "model=smollm2-135m"])
            assert ablation.optim.judge_lr <= 1e-5, setting
        alfworld = compose(config_name="train", overrides=["+setting=alfworld"])
        alfworld_ablation = compose(config_name="ablate", overrides=["+setting=alfworld"])
    assert alfworld.optim.judge_lr == 3e-4 and alfworld_ablation.optim.judge_lr == 1e-4  # the encoder judge's own
