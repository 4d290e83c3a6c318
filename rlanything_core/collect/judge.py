"""Judge votes: ``m`` samples of the generative reward model per agent step, parsed to ``+1`` / ``-1`` / ``0``.

The judge sees the step's context (goal and observation with the admissible actions), the policy's response and the
next observation, rendered with the judge tokenizer's chat template; every piece of policy or environment text is
sanitized so it cannot forge template tokens. An output without a parseable ``\\boxed{±1}`` is a format failure: it is
kept with vote ``0`` (counted, and penalized in the judge's own reward), never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from rlanything_core.collect.prompts import Messages, judge_messages
from rlanything_core.generation.parsing import parse_vote
from rlanything_core.generation.prompts import sanitize_untrusted
from rlanything_core.generation.types import SamplingParams
from rlanything_core.records import AgentStep, Episode, JudgeSample

__all__ = ["JudgeCollector", "JudgeStats", "step_context"]


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


class JudgeCollector:
    """Sample ``num_votes`` judge outputs for every step of every episode (one batched call per chunk).

    Args:
        backend: the judge's generation backend (its ``tokenizer`` is used to sanitize untrusted text).
        num_votes: ``m`` (``>= 1``).
        sampling: sampling parameters (temperature 0.8 in the paper); the seed is set per call.
        chunk_size: prompts per backend call (bounds memory; progress is reported per chunk).
        progress: show a progress bar.
    """

    def __init__(
        self,
        backend: Any,
        *,
        num_votes: int = 3,
        sampling: SamplingParams | None = None,
        chunk_size: int = 256,
        progress: bool = False,
    ) -> None:
        if isinstance(num_votes, bool) or not isinstance(num_votes, int) or num_votes < 1:
            raise ValueError(f"num_votes: expected an integer >= 1 (m), got {num_votes!r}")
        self.backend = backend
        self.num_votes = num_votes
        self.sampling = sampling or SamplingParams(max_new_tokens=128, temperature=0.8)
        self.chunk_size = chunk_size
        self.progress = progress

    def messages(self, episode: Episode, step: AgentStep) -> Messages:
        """The judge prompt for one step of one episode."""
        tokenizer = getattr(self.backend, "tokenizer", None)

        def sanitize(text: str) -> str:
            return sanitize_untrusted(text, tokenizer) if tokenizer is not None else text

        return judge_messages(episode.goal, step_context(step), step.response, step.next_observation, sanitize=sanitize)

    def judge(self, episodes: Sequence[Episode], *, seed: int) -> JudgeStats:
        """Fill ``step.judge`` with ``num_votes`` samples for every step (replacing earlier ones)."""
        cells = [(e, st) for e in episodes for st in e.steps]
        prompts = [self.messages(e, st) for e, st in cells for _ in range(self.num_votes)]
        stats = JudgeStats(steps=len(cells), votes=len(prompts))
        samples: list[JudgeSample] = []
        bar = tqdm(total=len(prompts), desc="judge votes", disable=not self.progress, leave=False)
        for start in range(0, len(prompts), self.chunk_size):
            params = SamplingParams(
                max_new_tokens=self.sampling.max_new_tokens,
                temperature=self.sampling.temperature,
                top_p=self.sampling.top_p,
                seed=seed + start,
                stop=self.sampling.stop,
            )
            for gen in self.backend.generate(prompts[start : start + self.chunk_size], params):
                vote = parse_vote(gen.text)
                samples.append(JudgeSample(vote, gen.text, gen.prompt_token_ids, gen.token_ids, gen.logprobs))
            bar.update(min(self.chunk_size, len(prompts) - start))
        bar.close()
        for n, (_, step) in enumerate(cells):
            step.judge = samples[n * self.num_votes : (n + 1) * self.num_votes]
        stats.format_failures = sum(s.vote == 0 for s in samples)
        return stats
