"""Plain-Python records of what a rollout produced, before collation into tensors (``StepBatch``).

Collectors fill these; the environment layer (critic feedback, rewriters) reads them; ``types.collate``
turns a list of them into the tensor data model. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["AgentStep", "Episode", "GeneratedSequence", "JudgeSample"]


class GeneratedSequence(Protocol):
    """The generated sequence every record carries, and all a training row is built from.

    ``AgentStep``, ``JudgeSample``, ``collect.coding.CodeSample`` and ``GeneratedTest`` have these three fields;
    ``types.rows_from_records`` packs any of them into rows.

    Attributes:
        prompt_token_ids: the rendered prompt (conditioned on, not trained).
        token_ids: the generated tokens (the row's response).
        logprobs: per generated token, under the model at sampling time; empty when not recorded (the trainer
            recomputes old log-probs anyway).
    """

    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]


@dataclass
class JudgeSample:
    """One judge output about one step: the generated text, its tokens, and the parsed vote.

    Attributes:
        vote: ``+1`` / ``-1``, or ``0`` when the output could not be parsed (a format failure, kept and counted).
        text: the judge's full generated text (reasoning, then ``\\boxed{±1}``).
        prompt_token_ids: the rendered judge prompt.
        token_ids: generated tokens.
        logprobs: per generated token, under the judge at sampling time (for the PPO ratio).
        p_plus: ``P(+1)`` the vote was drawn from, where the sampler knows it (the encoder judge, a judge of known
            quality); ``None`` for a generative judge. The step records keep it; the expected-vote mode reads it.
    """

    vote: int
    text: str
    prompt_token_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    p_plus: float | None = None


@dataclass
class AgentStep:
    """One policy turn: what it saw, what it generated, what it did, and what came back.

    Attributes:
        observation: the observation the policy acted on.
        admissible_actions: the actions offered at this step.
        prompt_token_ids: the rendered policy prompt (chat template applied).
        token_ids: generated tokens of the policy's response.
        logprobs: per generated token, under the policy at sampling time.
        response: the decoded response text.
        action: the action sent to the environment.
        action_parse_failed: the response named no valid action and the documented fallback was used.
        next_observation: what the environment returned.
        judge: the judge's samples about this step (``m`` of them once judged).
    """

    observation: str
    admissible_actions: list[str]
    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    response: str
    action: str
    action_parse_failed: bool = False
    next_observation: str = ""
    judge: list[JudgeSample] = field(default_factory=list)


@dataclass
class Episode:
    """One rollout of a task.

    Attributes:
        task_id: the task (game file, problem id, ...) it played.
        group_id: the task group it belongs to in this iteration (rollouts of one task share it).
        goal: the task's goal text.
        steps: the policy turns, in order.
        won: whether the task was solved (outcome ``+1``; else ``-1``).
        failure_reason: why it ended without success when that is not simply the step limit
            (``"worker_crash"``, ``"worker_timeout"``, ...), else ``None``.
    """

    task_id: str
    group_id: int
    goal: str
    steps: list[AgentStep] = field(default_factory=list)
    won: bool = False
    failure_reason: str | None = None

    @property
    def outcome(self) -> float:
        """The verifiable outcome ``O``: ``+1`` on success, ``-1`` otherwise."""
        return 1.0 if self.won else -1.0
