"""Action selection and judge votes for encoder scorers (the CPU-scale policy and judge).

``ScorerSelector`` (an ``ActionSelector``) renders the compact state text (``collect.state_text``), scores every
admissible command with an :class:`~rlanything_core.models.scorer.EncoderScorerPolicy` in one batched call per step,
samples one command at ``temperature`` (greedy at 0) with the step's own seed, and records the decision as a token
row (``models.scorer_rows``) whose response token is the chosen index, with its log-prob under the policy's
distribution.

``EncoderVotes`` (a ``VoteSampler``) reads a compact step text (goal, action, result, previous actions, context),
computes ``P(+1)`` once per step with an :class:`~rlanything_core.models.encoder_judge.EncoderJudge`, and draws each
of the ``m`` votes from it with the vote's own seed; each vote's log-prob trains the judge by consistency feedback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rlanything_core.collect.action_selection import Selection
from rlanything_core.collect.prompts import Messages
from rlanything_core.collect.state_text import ActionResultText, JudgeStepText, alfworld_state_text
from rlanything_core.models.scorer import candidate_log_softmax
from rlanything_core.records import AgentStep, Episode, JudgeSample

__all__ = ["EncoderVotes", "ScorerSelector"]


class ScorerSelector:
    """Sample an admissible command from an encoder scorer's distribution.

    Args:
        temperature: sampling temperature (``>= 0``; 0: greedy). In training it is the policy's own temperature, so
            the recorded log-prob is the probability the command was sampled with.
        earlier_turns: earlier turns in the state text.
        recent_actions: commands on the state text's ``last actions`` line.
    """

    boxed_answer = False

    def __init__(self, *, temperature: float = 1.0, earlier_turns: int = 2, recent_actions: int = 4) -> None:
        if not temperature >= 0:
            raise ValueError(f"temperature: expected >= 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.earlier_turns = earlier_turns
        self.recent_actions = recent_actions

    def render_state(self, goal: str, history: Sequence[tuple[str, str]], observation: str) -> Messages:
        """The policy's input at a step: one message holding the state text (the collector calls this)."""
        text = alfworld_state_text(
            goal, history, observation, earlier_turns=self.earlier_turns, recent_actions=self.recent_actions
        )
        return [{"role": "user", "content": text}]

    def select(
        self, backend: Any, prompts: Sequence[Messages], actions: Sequence[Sequence[str]], *, seeds: Sequence[int]
    ) -> list[Selection]:
        """Score every state's commands in one batch, then sample each with its own seed.

        Args:
            backend: the ``EncoderScorerPolicy``.
            prompts: from :meth:`render_state` (the last message's content is the state text).
            actions: each state's admissible commands (at least one each).
            seeds: one per state.
        """
        for i, cands in enumerate(actions):
            if not cands:
                raise ValueError(f"actions[{i}]: every live episode needs at least one admissible action")
        states = [backend.state_ids(p[-1]["content"]) for p in prompts]
        cands_ids = [[backend.command_ids(a) for a in cands] for cands in actions]
        with torch.no_grad():
            logits = backend.logits(states, cands_ids)
        out = []
        for state, cands, ids, lg, seed in zip(states, actions, cands_ids, logits, seeds):
            if self.temperature == 0:
                index = int(lg.argmax())
            else:
                probs = torch.softmax(lg.double() / self.temperature, dim=0)
                index = int(torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed)))
            logp = float(candidate_log_softmax(lg, temperature=backend.temperature)[index])
            prompt, response = backend.layout.encode(state, ids, index)
            out.append(Selection(prompt, response, [logp], cands[index], cands[index]))
        return out


class EncoderVotes:
    """Votes of an encoder judge: ``m`` seeded samples from ``P(+1)`` per step.

    Args:
        previous_actions: earlier commands shown to the judge (the default step text's).
        step_text: what the judge reads about a step (``collect.state_text.JudgeStepText``; Hydra:
            ``votes.encoder.step_text``, ``+judge_input=state_summary``); ``None``: ``ActionResultText``.
    """

    def __init__(self, *, previous_actions: int = 3, step_text: JudgeStepText | None = None) -> None:
        self.previous_actions = previous_actions
        self.step_text = step_text if step_text is not None else ActionResultText(previous_actions)

    def render_step(self, episode: Episode, step: AgentStep) -> Messages:
        """The judge's input about one step (the judge collector calls this instead of the LLM prompt)."""
        index = next((t for t, s in enumerate(episode.steps) if s is step), len(episode.steps))
        history = [(s.observation, s.action) for s in episode.steps[:index]]
        text = self.step_text(episode.goal, history, step.observation, step.action, step.next_observation)
        return [{"role": "user", "content": text}]

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        """``P(+1)`` once per distinct prompt (the m votes of a step share one), then one Bernoulli draw per vote.

        Args:
            backend: the ``EncoderJudge``.
            prompts: from :meth:`render_step`.
            seeds: one per vote.
        """
        distinct: dict[int, int] = {}
        texts: list[tuple[int, ...]] = []
        for p in prompts:
            if id(p) not in distinct:
                distinct[id(p)] = len(texts)
                texts.append(backend.text_ids(p[-1]["content"]))
        if not texts:
            return []
        with torch.no_grad():
            logp = backend.vote_log_probs(texts)  # (D, 2): log P(-1), log P(+1)
        out = []
        for p, seed in zip(prompts, seeds):
            d = distinct[id(p)]
            u = float(torch.rand((), generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
            k = 1 if u < float(logp[d, 1].exp()) else 0
            prompt_ids, response = backend.layout.encode(texts[d], [], k)
            out.append(JudgeSample(1 if k else -1, "+1" if k else "-1", prompt_ids, response, [float(logp[d, k])],
                                   p_plus=float(logp[d, 1].exp())))
        return out
