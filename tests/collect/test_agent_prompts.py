"""The policy prompt's history: recent turns in full, older turns as their actions."""

from __future__ import annotations

from rlanything_core.collect.prompts import agent_messages, render_history

HISTORY = [("obs 0", "go to desk 1"), ("obs 1", "open drawer 1"), ("obs 2", "close drawer 1")]


def test_recent_turns_in_full_and_older_actions_kept() -> None:
    text = render_history(HISTORY, max_turns=1)
    assert text.splitlines() == [
        "earlier actions: go to desk 1; open drawer 1",
        "observation: obs 2",
        "you took action: close drawer 1",
    ]


def test_no_earlier_line_when_everything_fits() -> None:
    assert "earlier actions" not in render_history(HISTORY, max_turns=3)
    assert "earlier actions" not in render_history(HISTORY, max_turns=None)
    assert render_history(HISTORY, max_turns=0) == "earlier actions: go to desk 1; open drawer 1; close drawer 1"


def test_likelihood_prompt_states_the_task_last() -> None:
    user = agent_messages("put a mug in sink.", HISTORY, "obs 3", ["look"], max_history_turns=1,
                          boxed_answer=False)[-1]["content"]
    assert user.index("earlier actions") < user.index("observation: obs 3") < user.index("Your task is to")
