"""Data model shared by every generation backend: prompts, sampling parameters, generation records, the Protocol.

A prompt is either a chat (a list of ``{"role": ..., "content": ...}`` messages, rendered with the tokenizer's own
chat template plus the generation prompt) or pre-rendered prompt token ids. Every backend returns one
:class:`Generation` per prompt, in input order.

Log-probabilities: ``Generation.logprobs[t]`` is ``log softmax(logits_t)[token_t]`` of the model at temperature 1.0,
with no top-p truncation, whatever temperature / top-p the token was *sampled* with. That is the quantity the trainer
recomputes for the PPO ratio ``exp(logp_new - logp_old)`` (vLLM's default ``raw_logprobs`` mode returns the same).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol, Union, runtime_checkable

__all__ = [
    "ChatMessages",
    "FinishReason",
    "Generation",
    "GenerationBackend",
    "Prompt",
    "SamplingParams",
    "is_token_ids",
]

ChatMessages = Sequence[Mapping[str, str]]
"""A chat: messages with ``role`` and ``content``."""

Prompt = Union[ChatMessages, Sequence[int]]  # noqa: UP007 (a runtime alias; `|` on typing aliases needs 3.10+)
"""A chat to render with the chat template, or already-rendered prompt token ids."""


class FinishReason(str, Enum):
    """Why a generation ended."""

    EOS = "eos"
    """The model emitted an end-of-sequence token (kept as the last of ``token_ids``)."""
    STOP_STRING = "stop_string"
    """A stop string appeared; ``text`` ends before it, ``token_ids`` end with the token that completed it."""
    LENGTH = "length"
    """``max_new_tokens`` were generated."""
    PROMPT_TOO_LONG = "prompt_too_long"
    """The prompt does not fit the model's context with ``max_new_tokens``; nothing was generated (data, not error)."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample.

    Attributes:
        max_new_tokens: maximum number of generated tokens (>= 1).
        temperature: softmax temperature; ``0`` means greedy (argmax), which ignores ``top_p`` and ``seed``.
        top_p: nucleus sampling mass in ``(0, 1]``; the smallest set of most likely tokens whose mass reaches it.
        seed: sampling seed. Prompt ``i`` of a call uses its own generator seeded from ``(seed, i)``, so the
            result for a prompt does not depend on batch size or on the other prompts (up to float rounding);
            ``generate(..., seeds=...)`` gives each prompt an explicit seed instead (not tied to its position).
        stop: stop strings; generation of a prompt ends when its text contains one (not included in ``text``).
        ignore_eos: keep generating past EOS (benchmarks with a fixed number of tokens).
    """

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = field(default_factory=tuple)
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        steps = self.max_new_tokens
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"max_new_tokens: expected an integer >= 1, got {self.max_new_tokens!r}")
        temperature = self.temperature
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature: expected a finite float >= 0, got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p: expected a float in (0, 1], got {self.top_p!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {self.seed!r}")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"stop: expected a tuple of non-empty strings, got {self.stop!r}")
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy (``temperature == 0``)."""
        return self.temperature == 0


@dataclass
class Generation:
    """What a backend generated for one prompt.

    Attributes:
        prompt_token_ids: the rendered prompt, ``(P,)``.
        token_ids: generated tokens, ``(T,)``, including the final EOS token when ``finish_reason`` is ``EOS``
            (so a trainer learns to stop), and the token completing the stop string for ``STOP_STRING``.
        logprobs: ``(T,)`` log-probabilities of ``token_ids`` under the model at temperature 1.0 (see module doc).
        text: decoded response without the final EOS token and without the stop string.
        finish_reason: why it ended.
    """

    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: FinishReason

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(
                f"logprobs: expected one per token ({len(self.token_ids)}), got {len(self.logprobs)}"
            )


def is_token_ids(prompt: Prompt) -> bool:
    """Tell a pre-rendered prompt (a non-empty sequence of ints) from a chat (a non-empty sequence of mappings).

    Raises:
        ValueError: the prompt is empty or neither form.
    """
    if isinstance(prompt, (str, bytes)) or not isinstance(prompt, Sequence) or len(prompt) == 0:
        raise ValueError(f"prompt: expected a non-empty list of chat messages or of token ids, got {prompt!r:.80}")
    if all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in prompt):
        return True
    if all(isinstance(m, Mapping) and "role" in m and "content" in m for m in prompt):
        return False
    raise ValueError(f"prompt: expected chat messages with 'role' and 'content', or token ids, got {prompt!r:.80}")


@runtime_checkable
class GenerationBackend(Protocol):
    """Anything that turns prompts into :class:`Generation` records (transformers, vLLM, ...)."""

    def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams, *, seeds: Sequence[int] | None = None
    ) -> list[Generation]:
        """Generate one completion per prompt, in input order (``seeds``: each prompt's own sampling seed)."""
        ...

    def update_weights(self, named_tensors: Mapping[str, object]) -> None:
        """Load new policy weights (names as in the trainer's ``state_dict``)."""
        ...
