"""How the policy turns a prompt and the admissible commands into one action.

Two selectors behind one protocol:

- ``BoxedIndexSelector``: free generation with the paper's ``\\boxed{index}`` answer. A response that names no valid
  index falls back to a uniformly random admissible action (seeded), and the step is marked
  ``action_parse_failed`` so it is counted, never a silent index 0 as in the authors' code.
- ``LikelihoodSelector``: scores every admissible command's log-likelihood as the response and samples one from the
  softmax of those scores at ``temperature`` (always valid; the right choice for small models that cannot yet follow
  the answer format).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch

from rlanything_core.collect.prompts import Messages
from rlanything_core.generation.parsing import parse_action_index
from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.types import SamplingParams

__all__ = ["ActionSelector", "BoxedIndexSelector", "LikelihoodSelector", "Selection"]


@dataclass(frozen=True)
class Selection:
    """One chosen action with the tokens that produced it.

    Attributes:
        prompt_token_ids: the rendered prompt.
        token_ids: the response tokens (for the likelihood selector: the chosen command followed by EOS).
        logprobs: per response token, at sampling time (empty when the trainer recomputes them).
        response: response text.
        action: the command sent to the environment.
        parse_failed: the response named no valid action and the fallback chose it.
    """

    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    response: str
    action: str
    parse_failed: bool = False


class ActionSelector(Protocol):
    """Picks one action per live episode in a single batched model call."""

    boxed_answer: bool
    """Whether the prompt asks for ``\\boxed{index}`` (free generation) or for the command itself."""

    def select(
        self, backend: Any, prompts: Sequence[Messages], actions: Sequence[Sequence[str]], *, seeds: Sequence[int]
    ) -> list[Selection]:
        """One selection per prompt, in order; ``seeds[i]`` drives prompt ``i``'s randomness."""
        ...


class BoxedIndexSelector:
    """Free generation; the action is the admissible command whose index is in the last ``\\boxed{}``.

    Args:
        sampling: sampling parameters (the ``seed`` field is replaced per call).
    """

    boxed_answer = True

    def __init__(self, sampling: SamplingParams) -> None:
        self.sampling = sampling

    def select(
        self, backend: Any, prompts: Sequence[Messages], actions: Sequence[Sequence[str]], *, seeds: Sequence[int]
    ) -> list[Selection]:
        """Generate, parse ``\\boxed{index}``, fall back to a seeded random admissible action when unparseable.

        The batch is sampled in one call seeded by ``seeds[0]`` (the backend seeds prompt ``i`` from ``(seed, i)``),
        so free generation is reproducible for a fixed batch; the fallback uses each prompt's own seed.
        """
        params = replace(self.sampling, seed=seeds[0] if seeds else 0)
        generations = backend.generate(list(prompts), params)
        out = []
        for gen, cands, seed in zip(generations, actions, seeds):
            index = parse_action_index(gen.text, len(cands))
            failed = index is None
            chosen = cands[random.Random(seed).randrange(len(cands))] if index is None else cands[index]
            out.append(Selection(gen.prompt_token_ids, gen.token_ids, gen.logprobs, gen.text, chosen, failed))
        return out


class LikelihoodSelector:
    """Sample an admissible command from ``softmax(loglik / temperature)``; greedy when ``temperature == 0``.

    Args:
        temperature: softmax temperature over the commands' summed log-likelihoods (``>= 0``).
        length_normalized: score each command by its mean log-likelihood per token (command + EOS) instead of the
            sum. Candidates of very different lengths (a web page's ``DONE`` against ``type "keneth" into [7]
            input_text``) otherwise differ by ~11 nats per extra token under a fresh model, which then always picks
            the shortest one.
    """

    boxed_answer = False

    def __init__(self, *, temperature: float = 1.0, length_normalized: bool = False) -> None:
        if not temperature >= 0:
            raise ValueError(f"temperature: expected >= 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.length_normalized = bool(length_normalized)

    def select(
        self, backend: Any, prompts: Sequence[Messages], actions: Sequence[Sequence[str]], *, seeds: Sequence[int]
    ) -> list[Selection]:
        """Score each command as the response, then sample with the prompt's own seed."""
        eos = backend.tokenizer.eos_token_id
        out = []
        for prompt, cands, seed in zip(prompts, actions, seeds):
            gen = torch.Generator().manual_seed(seed)
            if not cands:
                raise ValueError("actions: every live episode needs at least one admissible action")
            prompt_ids = render_prompt(backend.tokenizer, prompt)
            try:
                scores = torch.tensor(backend.score_continuations(prompt_ids, list(cands)), dtype=torch.float64)
                if self.length_normalized:
                    counts = [len(backend.tokenizer(c, add_special_tokens=False)["input_ids"]) + 1 for c in cands]
                    scores = scores / torch.tensor(counts, dtype=torch.float64)
            except ValueError:  # the prompt does not fit the context: uniform fallback, counted as a parse failure
                action = cands[int(torch.randint(len(cands), (1,), generator=gen))]
                out.append(Selection(prompt_ids, [], [], "", action, True))
                continue
            if self.temperature == 0:
                index = int(scores.argmax())
            else:
                probs = torch.softmax(scores / self.temperature, dim=0)
                index = int(torch.multinomial(probs, 1, generator=gen))
            action = cands[index]
            tokens = list(backend.tokenizer(action, add_special_tokens=False)["input_ids"]) + [int(eos)]
            out.append(Selection(prompt_ids, tokens, [], action, action, False))
        return out
