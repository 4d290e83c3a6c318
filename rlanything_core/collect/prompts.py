"""Chat messages for the policy, the judge, the coder and the unit-test writer (the paper's prompts, as messages).

Prompts are message lists rendered by the tokenizer's chat template in the backend, never hand-written special tokens.
Text that comes from a model or an environment and is embedded in another model's prompt goes through
``sanitize`` (given by the backend) so that it cannot forge the template's special tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "Messages",
    "StepJudgePrompt",
    "agent_messages",
    "code_messages",
    "judge_messages",
    "render_history",
    "rubric_messages",
    "unit_test_messages",
]

Messages = list[dict[str, str]]


def _identity(text: str) -> str:
    return text


def render_history(history: Sequence[tuple[str, str]], *, max_turns: int | None = None) -> str:
    """``observation: ...`` / ``you took action: ...`` lines, keeping the last ``max_turns`` turns in full.

    The actions of the older turns stay, on one ``earlier actions:`` line (a few tokens each): without them an agent
    with a short window cannot tell which places it has already searched, and walks back to them.
    """
    past = list(history)
    split = 0 if max_turns is None else max(0, len(past) - max(0, max_turns))
    earlier, turns = past[:split], past[split:]
    lines: list[str] = []
    if earlier:
        lines.append("earlier actions: " + "; ".join(action for _, action in earlier))
    for observation, action in turns:
        lines.append(f"observation: {observation.strip()}")
        lines.append(f"you took action: {action}")
    return "\n".join(lines)


def agent_messages(
    goal: str,
    history: Sequence[tuple[str, str]],
    observation: str,
    admissible_actions: Sequence[str],
    *,
    max_history_turns: int | None = 10,
    boxed_answer: bool = True,
) -> Messages:
    """The policy's prompt for one step of a text game (Open-AgentRL sample/alfworld_rl_rollout.py, as chat messages).

    Args:
        goal: the task ("put a clean mug in the coffee machine").
        history: earlier ``(observation, action)`` turns.
        observation: the current observation.
        admissible_actions: numbered in the prompt from 0 (with ``boxed_answer``; likelihood scoring leaves them out).
        max_history_turns: keep only the most recent turns (the authors render the full, quadratic history).
        boxed_answer: ask for ``\\boxed{index}`` (free generation); ``False`` for likelihood scoring of the commands
            (no command list; the task is stated at the end).
    """
    past = render_history(history, max_turns=max_history_turns)
    if boxed_answer:
        numbered = "\n".join(f"{i}) {a}" for i, a in enumerate(admissible_actions))
        user = (
            "You are playing a text game. Complete the task as soon as possible.\n"
            f"Your task is to: {goal}\n" + (f"{past}\n" if past else "") + f"observation: {observation.strip()}\n"
            f"Admissible actions:\n{numbered}\n"
            "Think briefly, then put the integer index of your chosen action in \\boxed{}."
        )
    else:
        # Likelihood scoring reads the commands as continuations, so listing them would only add distractors (every
        # object's name) between the task and the answer; the task is stated last, next to the answer, where even
        # a tiny model can match the command's object against it.
        user = (
            "You are playing a text game. Complete the task as soon as possible.\n"
            + (f"{past}\n" if past else "")
            + f"observation: {observation.strip()}\nYour task is to: {goal}\nReply with the chosen action."
        )
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": user}]


JUDGE_RUBRIC = (
    "You are judging ONE step of an agent playing a text game. Score 1 if and only if: (a) the action is appropriate "
    "for the observation and the goal (it explores, makes progress or completes the task); (b) the reasoning, if any, "
    "is relevant, consistent and mentions no object that does not exist; (c) the action is admissible and the next "
    "observation is consistent with it. Otherwise score -1 (irrelevant action, undoing progress, hallucination, "
    "contradiction). Think first, then put the final score, 1 or -1, in \\boxed{}."
)


@dataclass(frozen=True)
class StepJudgePrompt:
    """A judge's prompt for one step: a rubric, then four titled sections (goal, context, response, next observation).

    Everything from the policy or the environment passes through ``sanitize``: the judge reads it as data. Called as
    ``prompt(goal, context, response, next_observation, *, sanitize=...)``, the ``prompt_builder`` signature of
    :class:`~rlanything_core.collect.judge.JudgeCollector`; one instance per rubric (:data:`judge_messages`,
    :data:`~rlanything_core.collect.gui_prompts.gui_judge_messages`).

    Attributes:
        rubric: the scoring rubric, first in the user message.
        titles: the section titles of the goal, the context, the response and the next observation, in that order.
    """

    rubric: str
    titles: tuple[str, str, str, str]

    def __call__(
        self,
        goal: str,
        context: str,
        response: str,
        next_observation: str,
        *,
        sanitize: Callable[[str], str] = _identity,
    ) -> Messages:
        """The messages of one step (:func:`rubric_messages` with this rubric and these section titles)."""
        sections = dict(zip(self.titles, (goal, context, response, next_observation), strict=True))
        return rubric_messages(self.rubric, sections, sanitize=sanitize)


judge_messages = StepJudgePrompt(
    JUDGE_RUBRIC, ("Goal", "What the agent saw", "The agent's response", "Next observation")
)
"""The judge's prompt for one step of a text game: the step's context, the policy's response, the next observation."""


def rubric_messages(rubric: str, sections: dict[str, str], *, sanitize: Callable[[str], str] = _identity) -> Messages:
    """An evaluator's prompt: a careful-evaluator system message, then the ``rubric`` and the ``sections``.

    Each item of ``sections`` becomes a ``### title`` section holding its text passed through ``sanitize``.
    """
    user = "\n\n".join([rubric] + [f"### {title}\n{sanitize(text)}" for title, text in sections.items()])
    return [{"role": "system", "content": "You are a careful evaluator."}, {"role": "user", "content": user}]


def code_messages(statement: str, *, stdin_io: bool, starter_code: str = "", think: bool = True) -> Messages:
    """The coder's prompt: think, then one ``python`` code block.

    Args:
        statement: the problem.
        stdin_io: a stdin/stdout problem (else: complete the starter code).
        starter_code: shown under the statement when given.
        think: ask for reasoning before the block (the paper's format); ``False`` asks for the block only (the
            response is prefilled with its fence, see :mod:`rlanything_core.collect.prefill`).
    """
    io_rule = (
        "Read the input with input() and print the output with print()."
        if stdin_io
        else "Complete the given starter code."
    )
    starter = f"\n\nStarter code:\n```python\n{starter_code}\n```" if starter_code else ""
    ask = (
        "You need to think first, then write a Python program in a single ```python code block. "
        if think
        else "Write a Python program in a single ```python code block, with no explanation. "
    )
    user = f"{ask}{io_rule}\n\nThis is the problem:\n{statement}{starter}"
    return [
        {"role": "system", "content": "You are a helpful assistant who solves programming problems."},
        {"role": "user", "content": user},
    ]


def unit_test_messages(
    statement: str, *, sanitize: Callable[[str], str] = _identity, scaffold: bool = False
) -> Messages:
    """The unit-test writer's prompt: exactly one correct, discriminative test.

    The authors' semantics: Open-AgentRL ``sample/llm_reward_rollout.py``.

    Args:
        statement: the problem (untrusted: it may be a rewrite by a model).
        sanitize: neutralizes special-token strings in ``statement``.
        scaffold: the response is prefilled with the format's opening (``**Test Input:**`` and a fence, see
            :mod:`rlanything_core.collect.prefill`), so ask for the test without reasoning; ``False``: reason step
            by step, then the test (the paper's format).
    """
    lead = (
        "You are a rigorous unit-test designer. Produce exactly ONE new test example for the problem below that is "
        "correct and discriminative (it separates correct from subtly wrong programs). "
    )
    how = "Write only the test, in this format:" if scaffold else "Reason step by step, then end with this format:"
    user = (
        f"{lead}{how}\n**Test Input:**\n```\n<stdin>\n```\n**Test Output:**\n```\n<stdout>\n```\n"
        "**Explanation:** <one sentence>\n\n"
        f"This is the problem:\n{sanitize(statement)}"
    )
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": user}]
