"""The encoder judge's input variants: the default is today's text; the state-summary one sees the policy's summary."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from rlanything_core.collect.scorer_selection import EncoderVotes
from rlanything_core.collect.state_text import (
    ActionResultText,
    StateSummaryText,
    judge_step_text,
    state_summary,
)
from rlanything_core.conf import CONF_DIR
from rlanything_core.records import AgentStep, Episode

HEAT = [
    ("You are in the middle of a room.", "go to countertop 1"),
    ("You see a apple 1.", "take apple 1 from countertop 1"),
    ("You pick up the apple 1.", "go to microwave 1"),
    ("The microwave 1 is closed.", "heat apple 1 with microwave 1"),
]


def _episode() -> Episode:
    obs = [o for o, _ in HEAT] + ["You heat the apple 1 using the microwave 1."]
    steps = [AgentStep(obs[t], [a], [], [], [], a, a, next_observation=obs[t + 1]) for t, (_, a) in enumerate(HEAT)]
    return Episode("g", 0, "put a hot apple in fridge.", steps)


def test_the_default_input_is_the_text_the_judge_read_before() -> None:
    episode = _episode()
    step = episode.steps[3]
    previous = [s.action for s in episode.steps[:3]]
    text = EncoderVotes().render_step(episode, step)[-1]["content"]
    assert text == judge_step_text(episode.goal, step.observation, step.action, step.next_observation, previous)
    assert ActionResultText(1)(episode.goal, HEAT[:3], "o", "a", "r").count(";") == 0  # one previous command


def test_the_state_summary_input_holds_what_decides_progress_in_a_heat_task() -> None:
    episode = _episode()
    votes = EncoderVotes(step_text=StateSummaryText())
    before = votes.render_step(episode, episode.steps[3])[-1]["content"]  # about to heat: holding, not yet heated
    assert "holding: apple 1\n" in before and "visited: countertop 1, microwave 1" in before
    assert "action: heat apple 1 with microwave 1" in before and "result: You heat the apple 1" in before
    assert state_summary(HEAT)[0] == "apple 1 (heated)"
    default = EncoderVotes().render_step(episode, episode.steps[3])[-1]["content"]
    assert "holding" not in default  # what today's judge cannot see


def test_the_config_group_builds_the_state_summary_judge(tmp_path: Path) -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        plain = compose("train", overrides=["model=minilm-scorer"])
        chosen = compose("train", overrides=["model=minilm-scorer", "+judge_input=state_summary"])
        spelled = compose("train", overrides=["model=minilm-scorer", "+judge_input=action_result"])
    assert "step_text" not in plain.votes.encoder  # the default config is unchanged
    assert isinstance(instantiate(chosen.votes.encoder).step_text, StateSummaryText)
    assert instantiate(spelled.votes.encoder).step_text == ActionResultText(3)
    assert instantiate(plain.votes.encoder).step_text == ActionResultText(3)
