"""Judge votes: ``m`` samples of the generative reward model per agent step, parsed to ``+1`` / ``-1`` / ``0``.

The judge sees the step's context (goal and observation with the admissible actions), the policy's response and the
next observation, rendered with the judge tokenizer's chat template; every piece of policy or environment text is
sanitized so it cannot forge template tokens. An output without a parseable ``\\boxed{±1}`` is a format failure: it is
kept with vote ``0`` (counted, and penalized in the judge's own reward), never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch
from tqdm.auto import tqdm

from rlanything_core.collect.prompts import Messages, judge_messages
from rlanything_core.generation.parsing import parse_vote
from rlanything_core.generation.prompts import render_prompt, sanitize_untrusted
from rlanything_core.generation.types import SamplingParams
from rlanything_core.records import AgentStep, Episode, JudgeSample
from rlanything_core.seeding import derive_seed

__all__ = [
    "GenerativeVotes",
    "JudgeCollector",
    "JudgeStats",
    "ScoredVotes",
    "VoteSampler",
    "step_context",
    "with_votes",
]


def with_votes(episode: Episode, votes: Sequence[Sequence[JudgeSample]]) -> Episode:
    """A copy of ``episode`` whose step ``t`` has ``votes[t]`` as its judge samples; ``episode`` is not changed.

    Only the episode and its step records are new (the token lists are shared, never written): judging returns
    data instead of writing into the caller's episodes, so an episode means the same thing wherever it is held.
    """
    if len(votes) != len(episode.steps):
        raise ValueError(f"votes: expected one list per step ({len(episode.steps)}), got {len(votes)}")
    return replace(episode, steps=[replace(st, judge=list(v)) for st, v in zip(episode.steps, votes)])


def step_context(step: AgentStep) -> str:
    """What the agent saw at a step: the observation and the numbered admissible actions."""
    numbered = "\n".join(f"{i}) {a}" for i, a in enumerate(step.admissible_actions))
    return f"observation: {step.observation.strip()}\nAdmissible actions:\n{numbered}"


@dataclass
class JudgeStats:
    """Counters of one judging pass."""

    steps: int = 0
    votes: int = 0
    format_failures: int = 0

    @property
    def format_failure_rate(self) -> float:
        """Unparseable outputs over all outputs."""
        return self.format_failures / self.votes if self.votes else 0.0


class VoteSampler(Protocol):
    """Turns judge prompts into judge samples (text, tokens, parsed vote), one per prompt."""

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        """One sample per prompt; ``seeds[i]`` drives prompt ``i``."""
        ...


class GenerativeVotes:
    """The paper's judge: free generation (reasoning, then ``\\boxed{±1}``), parsed with ``parse_vote``.

    The batch is sampled in one backend call seeded by ``seeds[0]`` (prompt ``i`` of a call is seeded from
    ``(seed, i)`` by the backend).
    """

    def __init__(self, sampling: SamplingParams | None = None) -> None:
        self.sampling = sampling or SamplingParams(max_new_tokens=128, temperature=0.8)

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        """Generate and parse."""
        params = replace(self.sampling, seed=seeds[0] if seeds else 0)
        return [
            JudgeSample(parse_vote(g.text), g.text, g.prompt_token_ids, g.token_ids, g.logprobs)
            for g in backend.generate(list(prompts), params)
        ]


class ScoredVotes:
    """A verdict-only judge for small models: the response is ``\\boxed{+1}`` or ``\\boxed{-1}``.

    The verdict is sampled from the softmax of the two responses' log-likelihoods at ``temperature``. The two
    responses have the same number of tokens and differ only in the sign: with ``\\boxed{1}`` against
    ``\\boxed{-1}`` the shorter one won by a whole token's log-likelihood (~11 nats for a model that has not learnt
    the format), so an untrained judge voted +1 on every step, its m votes never disagreed, consistency feedback had
    nothing to learn from and the integrated reward collapsed to the outcome plus a constant.

    It skips the reasoning, so it never fails the format; it is the CPU-scale stand-in for the generative judge
    (same prompt, same consistency training on the chosen response's tokens). Log-probs are left for the trainer.
    """

    CANDIDATES = ("\\boxed{+1}", "\\boxed{-1}")

    def __init__(self, *, temperature: float = 1.0) -> None:
        if not temperature > 0:
            raise ValueError(f"temperature: expected > 0, got {temperature!r}")
        self.temperature = float(temperature)

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        """Score both verdicts once per distinct prompt, then sample each vote with its own seed."""
        eos = int(backend.tokenizer.eos_token_id)
        cand_tokens = [
            list(backend.tokenizer(c, add_special_tokens=False)["input_ids"]) + [eos] for c in self.CANDIDATES
        ]
        last: tuple[Messages, list[int], torch.Tensor | None] | None = None
        out = []
        for prompt, seed in zip(prompts, seeds):
            if last is None or last[0] is not prompt:  # the m votes of a step share one prompt object: score once
                prompt_ids = render_prompt(backend.tokenizer, prompt)
                try:
                    scores = torch.tensor(backend.score_continuations(prompt_ids, list(self.CANDIDATES)),
                                          dtype=torch.float64)
                    probs: torch.Tensor | None = torch.softmax(scores / self.temperature, 0)
                except ValueError:  # the prompt does not fit the judge's context: no verdict (a format failure)
                    probs = None
                last = (prompt, prompt_ids, probs)
            _, prompt_ids, probs = last
            if probs is None:
                out.append(JudgeSample(0, "", prompt_ids, [], []))
                continue
            k = int(torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed)))
            out.append(JudgeSample(1 if k == 0 else -1, self.CANDIDATES[k], prompt_ids, cand_tokens[k], []))
        return out


class JudgeCollector:
    """Sample ``num_votes`` judge outputs for every step of every episode.

    Args:
        backend: the judge's backend (its ``tokenizer`` is used to sanitize untrusted text).
        num_votes: ``m`` (``>= 1``).
        votes: how outputs are produced (``GenerativeVotes`` as in the paper, or ``ScoredVotes`` for small models).
        chunk_size: prompts per backend call (bounds memory; progress is reported per chunk).
        progress: show a progress bar.
        prompt_builder: renders a step's judge prompt, with :func:`~rlanything_core.collect.prompts.judge_messages`'s
            signature (the text-game rubric by default; ``gui_judge_messages`` for the paper's GUI rubric).
    """

    def __init__(
        self,
        backend: Any,
        *,
        num_votes: int = 3,
        votes: VoteSampler | None = None,
        chunk_size: int = 256,
        progress: bool = False,
        prompt_builder: Callable[..., Messages] = judge_messages,
    ) -> None:
        if isinstance(num_votes, bool) or not isinstance(num_votes, int) or num_votes < 1:
            raise ValueError(f"num_votes: expected an integer >= 1 (m), got {num_votes!r}")
        self.backend = backend
        self.num_votes = num_votes
        self.votes = votes or GenerativeVotes()
        self.chunk_size = chunk_size
        self.progress = progress
        self.prompt_builder = prompt_builder

    def messages(self, episode: Episode, step: AgentStep) -> Messages:
        """The judge prompt for one step of one episode (a vote sampler with ``render_step`` renders its own)."""
        render_step = getattr(self.votes, "render_step", None)
        if callable(render_step):
            return list(render_step(episode, step))
        tokenizer = getattr(self.backend, "tokenizer", None)

        def sanitize(text: str) -> str:
            return sanitize_untrusted(text, tokenizer) if tokenizer is not None else text

        return self.prompt_builder(
            episode.goal, step_context(step), step.response, step.next_observation, sanitize=sanitize
        )

    def judge(self, episodes: Sequence[Episode], *, seed: int) -> tuple[list[Episode], JudgeStats]:
        """Vote ``num_votes`` times on every step; return judged copies of ``episodes`` and the pass's counters.

        The returned episodes are ``episodes`` in the same order, each step's ``judge`` holding its ``num_votes``
        samples (earlier ones replaced); the inputs are left as they were (see :func:`with_votes`), like
        ``AgentCollector.collect``'s ``(episodes, stats)``.

        Vote ``k`` on step ``t`` of rollout ``j`` in group ``g`` is seeded by ``derive_seed(seed, g, j, t, k)``
        (``j`` counts the group's rollouts in the order given), independent of the rest of the batch.
        """
        cells: list[tuple[Episode, AgentStep, tuple[int, int, int]]] = []
        seen: dict[int, int] = {}
        for e in episodes:
            j = seen.get(e.group_id, 0)
            seen[e.group_id] = j + 1
            cells.extend((e, st, (e.group_id, j, t)) for t, st in enumerate(e.steps))
        prompts: list[Messages] = []
        seeds: list[int] = []
        for e, st, key in cells:
            msg = self.messages(e, st)
            prompts.extend([msg] * self.num_votes)
            seeds.extend(derive_seed(seed, *key, k) for k in range(self.num_votes))
        samples: list[JudgeSample] = []
        bar = tqdm(total=len(prompts), desc="judge votes", disable=not self.progress, leave=False)
        for start in range(0, len(prompts), self.chunk_size):
            stop = start + self.chunk_size
            samples.extend(self.votes.sample(self.backend, prompts[start:stop], seeds[start:stop]))
            bar.update(len(prompts[start:stop]))
        bar.close()
        per_step = iter([samples[n * self.num_votes : (n + 1) * self.num_votes] for n in range(len(cells))])
        judged = [with_votes(e, [next(per_step) for _ in e.steps]) for e in episodes]
        stats = JudgeStats(steps=len(cells), votes=len(prompts), format_failures=sum(s.vote == 0 for s in samples))
        return judged, stats
