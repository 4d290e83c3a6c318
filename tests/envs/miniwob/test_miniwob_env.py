"""MiniWoB++ pages in the real headless Chromium: episodes, checker outcomes, invalid actions, seeds, settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlanything_core.envs.gui import GuiEpisode
from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec
from rlanything_core.envs.protocols import AgentEnv, GuiEnv, GuiObservation

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env(browser_tag: str) -> Iterator[object]:
    from rlanything_core.envs.miniwob.env import MiniwobEnv

    e = MiniwobEnv(max_steps=6)
    yield e
    e.close()


def pick(obs: GuiObservation, *parts: str) -> str:
    """The one candidate containing every part."""
    hits = [c for c in obs.candidates if all(p in c for p in parts)]
    assert len(hits) == 1, (parts, obs.candidates)
    return hits[0]


def field(obs: GuiObservation, key: str) -> str:
    return dict(obs.fields)[key]


def test_protocols(env: GuiEnv) -> None:
    assert isinstance(env, GuiEnv)
    assert isinstance(GuiEpisode(env, MiniwobTaskSpec("click-button"), close_env=False), AgentEnv)


def test_click_button_solved_and_lifted_time_limit(env: object) -> None:
    obs = env.reset(MiniwobTaskSpec("click-button", seed=4))
    assert obs.screenshot is not None and obs.screenshot.shape == (210, 160, 3) and obs.screenshot.dtype.name == "uint8"
    assert env.browser.driver.execute_script("return core.EPISODE_MAX_TIME;") >= 1e9
    step = env.step(pick(obs, "button", f'"{field(obs, "target")}"'))
    assert step.done and step.observation.candidates == ()
    outcome = env.verify()
    assert outcome.won and outcome.reward == 1.0


def test_login_user_by_typing_and_wrong_password_fails(env: object) -> None:
    obs = env.reset(MiniwobTaskSpec("login-user", seed=1))
    user, password = field(obs, "username"), field(obs, "password")
    obs = env.step(pick(obs, f'type "{user}"', "input_text")).observation
    assert f'value="{user}"' in obs.dom_text
    obs = env.step(pick(obs, f'type "{password}"', "input_password")).observation
    assert env.step(pick(obs, "click", "Login")).done and env.verify().won
    obs = env.reset(MiniwobTaskSpec("login-user", seed=1))
    obs = env.step(pick(obs, f'type "{field(obs, "username")}"', "input_text")).observation
    assert env.step(pick(obs, "click", "Login")).done
    outcome = env.verify()
    assert not outcome.won and outcome.reward == -1.0  # the raw reward of the page's checker


def test_same_seed_same_page_other_seed_other_page(env: object) -> None:
    a = env.reset(MiniwobTaskSpec("enter-text", seed=7))
    b = env.reset(MiniwobTaskSpec("enter-text", seed=7))
    c = env.reset(MiniwobTaskSpec("enter-text", seed=8))
    assert (a.instruction, a.dom_text, a.candidates) == (b.instruction, b.dom_text, b.candidates)
    assert a.instruction != c.instruction


def test_invalid_actions_are_counted_and_the_episode_goes_on(env: object) -> None:
    obs = env.reset(MiniwobTaskSpec("enter-text", seed=2))
    before = env.invalid_actions
    step = env.step("click [999] button")
    assert not step.done and "not on the page" in step.observation.invalid_action
    step = env.step("scroll somewhere")
    assert not step.done and "unparseable" in step.observation.invalid_action
    assert env.invalid_actions == before + 2
    obs = step.observation
    obs = env.step(pick(obs, f'type "{field(obs, "target")}"')).observation
    assert obs.invalid_action is None
    assert env.step(pick(obs, "Submit")).done and env.verify().won


def test_element_gone_after_the_page_changed(env: object) -> None:
    obs = env.reset(MiniwobTaskSpec("email-inbox-forward-nl", seed=3))
    icons = [c for c in obs.candidates if " span" in c]
    opened = env.step(pick(obs, f'"{field(obs, "by")}"', "div"))  # opening the email replaces the list
    assert not opened.done and "Forward" in opened.observation.dom_text
    gone = [c for c in icons if c.split()[1] not in opened.observation.dom_text]
    assert gone, "the list's icons should be gone"
    step = env.step(gone[0])
    assert not step.done and "not on the page" in step.observation.invalid_action
    assert "Forward" in step.observation.dom_text  # nothing happened


def test_done_and_fail_end_the_episode_with_the_checkers_verdict(env: object) -> None:
    env.reset(MiniwobTaskSpec("click-button", seed=1))
    assert env.step("DONE").done
    assert env.verify().reason == "the task's checker did not fire" and not env.verify().won
    env.reset(MiniwobTaskSpec("click-button", seed=1))
    assert env.step("FAIL").done and env.verify().reason == "agent gave up"


def test_own_page_settings_add_distractors_and_shuffle(env: object) -> None:
    plain = env.reset(MiniwobTaskSpec("rla-login-form", seed=5, settings=(("distractors", 0),)))
    hard = env.reset(MiniwobTaskSpec("rla-login-form", seed=5, settings=(("distractors", 4), ("shuffle", 1))))
    assert plain.dom_text.count("input_") == 2 and hard.dom_text.count("input_") == 6
    assert hard.instruction == plain.instruction  # same problem, same checker: only the page's difficulty moved
    obs = hard
    obs = env.step(pick(obs, f'type "{field(obs, "username")}"', "#username")).observation
    obs = env.step(pick(obs, f'type "{field(obs, "password")}"', "#password")).observation
    assert env.step(pick(obs, "Login")).done and env.verify().won
    obs = env.reset(MiniwobTaskSpec("rla-login-form", seed=5, settings=(("distractors", 2),)))
    obs = env.step(pick(obs, f'type "{field(obs, "username")}"', "#username")).observation
    obs = env.step(pick(obs, f'type "{field(obs, "password")}"', "#password")).observation
    obs = env.step(pick(obs, f'type "{field(obs, "username")}"', "#email")).observation  # a distractor filled in
    assert env.step(pick(obs, "Login")).done and env.verify().reward == -1.0


def test_hints_extend_the_instruction_only(env: object) -> None:
    base = env.reset(MiniwobTaskSpec("click-link", seed=2))
    hinted = env.reset(MiniwobTaskSpec("click-link", seed=2, hints=("Links are span elements.",)))
    assert hinted.instruction == base.instruction + "\nHints: Links are span elements."
    assert hinted.candidates == base.candidates


def test_gui_episode_step_limit_and_outcome(env: object) -> None:
    episode = GuiEpisode(env, MiniwobTaskSpec("enter-text", seed=3), close_env=False)
    first = episode.reset()
    assert first.goal.startswith("Enter") and first.observation.startswith("[") and first.screenshot is not None
    results = [episode.step("click [999]") for _ in range(env.max_steps)]
    assert [r.done for r in results] == [False] * (env.max_steps - 1) + [True]
    assert results[-1].truncated and not results[-1].won and episode.invalid_actions == env.max_steps


def test_browser_that_does_not_start_names_binary_and_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlanything_core.envs.miniwob.browser import Browser, BrowserStartError

    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/nonexistent/chromium")
    with pytest.raises(BrowserStartError, match="/nonexistent/chromium.*MINIWOB_CHROME_BINARY.*MINIWOB_CHROMEDRIVER"):
        Browser()
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/bin/false")  # exists, but is no browser: the driver fails
    with pytest.raises(BrowserStartError, match="Chromium did not start.*'/bin/false'.*MINIWOB_CHROME_BINARY"):
        Browser()


def test_harder_pages_are_solvable_with_the_candidate_actions(env: object) -> None:
    obs = env.reset(MiniwobTaskSpec("choose-date-easy", seed=1))  # a read-only box: the calendar must be used
    obs = env.step(pick(obs, "#datepicker", "click")).observation
    obs = env.step(pick(obs, "click [", f' a "{field(obs, "day")}"')).observation
    assert env.step(pick(obs, "Submit")).done and env.verify().won
    obs = env.reset(MiniwobTaskSpec("email-inbox-forward-nl", seed=1))
    obs = env.step(pick(obs, f'"{field(obs, "by")}"', "div")).observation
    obs = env.step(pick(obs, '"Forward"')).observation
    obs = env.step(pick(obs, f'type "{field(obs, "to")}"', "input_text")).observation
    assert env.step(pick(obs, "#send-forward")).done and env.verify().won
