"""The minimal LLM interface the environment layer needs: chats in, texts out (failure summaries, rewrites).

``ChatModel`` is what the critic-feedback and rewriter code calls; ``BackendChatModel`` adapts any
``generation.GenerationBackend`` (transformers, vLLM) to it. Tests may use a scripted ``ChatModel`` returning fixed
texts to exercise parsers and validators; the real-LLM path is exercised with SmolLM2 in the slow tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rlanything_core.generation.types import GenerationBackend

__all__ = ["BackendChatModel", "ChatModel", "ScriptedChatModel"]

Chat = list[dict[str, str]]


@runtime_checkable
class ChatModel(Protocol):
    """Complete a batch of chats; one text per chat, in order. ``seed`` makes sampling reproducible."""

    def complete(self, messages: list[Chat], *, seed: int) -> list[str]:
        """Return the generated text of each chat."""
        ...


@dataclass
class BackendChatModel:
    """A ``ChatModel`` over a ``GenerationBackend``.

    Args:
        backend: the generation backend (its chat template renders the messages).
        max_new_tokens: generation budget per chat.
        temperature: sampling temperature (the authors' environment model runs at 0.8).
        top_p: nucleus mass.
    """

    backend: GenerationBackend
    max_new_tokens: int = 256
    temperature: float = 0.8
    top_p: float = 0.95

    def complete(self, messages: list[Chat], *, seed: int) -> list[str]:
        """Generate with ``SamplingParams(seed=seed, ...)`` and return the texts."""
        from rlanything_core.generation.types import SamplingParams

        if not messages:
            return []
        params = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                                seed=seed)
        return [g.text for g in self.backend.generate(messages, params)]


@dataclass
class ScriptedChatModel:
    """Returns fixed texts in turn (cycling); records the chats it was given. A test double for an LLM's text."""

    replies: Sequence[str]
    calls: list[Chat] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.replies:
            raise ValueError("replies: expected at least one reply text")

    def complete(self, messages: list[Chat], *, seed: int) -> list[str]:
        """Return the next ``len(messages)`` scripted replies."""
        out = []
        for chat in messages:
            out.append(self.replies[len(self.calls) % len(self.replies)])
            self.calls.append(chat)
        return out
