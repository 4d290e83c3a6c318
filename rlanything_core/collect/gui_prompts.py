"""Chat messages for a GUI agent on a web page and for the judge of its steps (the paper's GUI rubric).

Same signatures as :func:`~rlanything_core.collect.prompts.agent_messages` and
:func:`~rlanything_core.collect.prompts.judge_messages`, so :class:`~rlanything_core.collect.agent.AgentCollector` and
:class:`~rlanything_core.collect.judge.JudgeCollector` take them as ``prompt_builder`` and nothing else changes. The
page is the DOM text of :func:`~rlanything_core.envs.miniwob.render.render_dom`; a vision-language policy or judge
gets the screenshot beside it (``GuiAgentObservation.screenshot``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rlanything_core.collect.prompts import Messages, StepJudgePrompt, render_history

__all__ = ["GUI_JUDGE_RUBRIC", "gui_agent_messages", "gui_judge_messages"]

_ACTIONS_HELP = (
    'Actions: click [ref] (an element), type "text" into [ref] (a text box), press <Key> (e.g. <Enter>, <Tab>, '
    "<ArrowDown>, C-a), wait (let the page update, e.g. a suggestion list), show more elements (when the page "
    "lists more than are shown), DONE (the task is complete), FAIL (it cannot be done)."
)


def gui_agent_messages(
    goal: str,
    history: Sequence[tuple[str, str]],
    observation: str,
    admissible_actions: Sequence[str],
    *,
    max_history_turns: int | None = 2,
    boxed_answer: bool = True,
) -> Messages:
    """The policy's prompt for one step on a web page.

    Args:
        goal: the instruction (the page's utterance, plus the hints of the task's version).
        history: earlier ``(page, action)`` turns (older ones keep only their actions).
        observation: the page as DOM text, one ``[ref] tag "text"`` line per element.
        admissible_actions: the DOM-derived candidates (numbered with ``boxed_answer``; left out for likelihood
            scoring, where they are the continuations).
        max_history_turns: turns rendered in full.
        boxed_answer: ask for ``\\boxed{index}`` (free generation) instead of the action itself.
    """
    past = render_history(history, max_turns=max_history_turns)
    head = f"You are a web agent acting on a web page. {_ACTIONS_HELP}\n" + (f"{past}\n" if past else "")
    if boxed_answer:
        numbered = "\n".join(f"{i}) {a}" for i, a in enumerate(admissible_actions))
        user = (
            f"{head}Instruction: {goal}\nPage elements:\n{observation.strip()}\nCandidate actions:\n{numbered}\n"
            "Think briefly, then put the integer index of your chosen action in \\boxed{}."
        )
    else:  # the instruction last, next to the scored action (see prompts.agent_messages)
        user = f"{head}Page elements:\n{observation.strip()}\nInstruction: {goal}\nReply with the next action."
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": user}]


GUI_JUDGE_RUBRIC = (
    "You are an evaluator for the most recent step of a GUI agent acting on a web page. Score 1 if and only if: "
    "(a) the action is relevant to the instruction given the page the agent saw; (b) it is executable: it names an "
    "element on that page, or is DONE only when the task looks complete; (c) the next page shows visible progress "
    "toward the instruction (or the task completes). Otherwise score -1 (an irrelevant or invalid action, undoing "
    "progress, DONE or FAIL too early, a repeated action without effect). Think first, then put the final score, "
    "1 or -1, in \\boxed{}."
)


gui_judge_messages = StepJudgePrompt(
    GUI_JUDGE_RUBRIC,
    ("Instruction", "The page the agent saw", "The agent's action", "The page after the action"),
)
"""The judge's prompt for one GUI step: the page and candidates before it, the action, the page after it."""
