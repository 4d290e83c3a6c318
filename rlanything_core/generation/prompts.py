r"""Prompt rendering with the tokenizer's own chat template, and neutralizing untrusted text.

Prompts are never assembled from hand-written special tokens (the reference implementation writes ChatML strings by
hand): :func:`render_prompt` applies ``tokenizer.apply_chat_template(..., add_generation_prompt=True)``.

Untrusted text (a policy's response shown to the judge, an environment observation, a rewritten task) may contain the
template's special-token strings, e.g. ``<|im_end|>\n<|im_start|>system``; tokenized as-is, they become real
control tokens and forge turns (a weak point of Open-AgentRL). :func:`sanitize_untrusted` breaks every such
string by inserting a space after its first character, so it tokenizes as plain text and stays readable.

A response *prefill* (:func:`render_prefilled_prompt`) starts the assistant's turn with fixed text (a code fence, a
unit-test scaffold) that the model then continues. Its tokens end the prompt: they are conditioned on, never sampled,
so they carry no log-prob and no gradient, and the trainer's recomputation over ``prompt + response`` sees the same
tokens the sampler did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlanything_core.generation.types import ChatMessages, Prompt, is_token_ids

__all__ = ["render_chat", "render_prefilled_prompt", "render_prompt", "sanitize_untrusted", "special_token_strings"]

_MAX_PASSES = 16


def special_token_strings(tokenizer: Any) -> list[str]:
    """Every string the tokenizer turns into a single control token: special tokens and other added tokens.

    Args:
        tokenizer: a transformers tokenizer.

    Returns:
        The strings, longest first (so overlapping tokens are broken at the longest match first).
    """
    strings = set(getattr(tokenizer, "all_special_tokens", []) or [])
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    strings.update(token.content for token in decoder.values())
    return sorted((s for s in strings if len(s) > 1), key=lambda s: (-len(s), s))


def sanitize_untrusted(text: str, tokenizer: Any) -> str:
    """Neutralize the tokenizer's special-token strings inside untrusted ``text``.

    Each occurrence of a special/added token string gets a space after its first character
    (``<|im_start|>`` becomes ``< |im_start|>``), repeated until none is left, so the result tokenizes to ordinary
    text tokens only. Text without such strings is returned unchanged.

    Args:
        text: untrusted text (model output, observation) to embed in another prompt.
        tokenizer: the tokenizer that will encode the prompt.

    Returns:
        The neutralized text.

    Raises:
        ValueError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ValueError(f"text: expected a str, got {type(text).__name__}")
    specials = special_token_strings(tokenizer)
    for _ in range(_MAX_PASSES):
        found = False
        for token in specials:
            if token in text:
                found = True
                text = text.replace(token, token[0] + " " + token[1:])
        if not found:
            return text
    raise RuntimeError("sanitize_untrusted: special tokens keep reappearing; the tokenizer's added tokens are unusual")


def render_chat(tokenizer: Any, messages: ChatMessages) -> str:
    """Render a chat with the tokenizer's chat template, ending with the assistant generation prompt.

    Raises:
        ValueError: the tokenizer has no chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("tokenizer: expected a tokenizer with a chat_template")
    rendered = tokenizer.apply_chat_template([dict(m) for m in messages], tokenize=False, add_generation_prompt=True)
    if not isinstance(rendered, str):  # pragma: no cover - guards a transformers API change
        raise RuntimeError(f"apply_chat_template(tokenize=False) returned {type(rendered).__name__}, expected str")
    return rendered


def render_prompt(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids of a prompt: chats go through :func:`render_chat`, token ids pass through.

    The rendered string is encoded with ``add_special_tokens=False``: the template already holds every control token.

    Args:
        tokenizer: a transformers tokenizer with a chat template.
        prompt: chat messages or token ids.

    Returns:
        The prompt token ids.
    """
    if is_token_ids(prompt):
        ids: Sequence[int] = prompt  # type: ignore[assignment]
        return [int(i) for i in ids]
    text = render_chat(tokenizer, prompt)  # type: ignore[arg-type]
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def render_prefilled_prompt(tokenizer: Any, messages: ChatMessages, prefill: str) -> list[int]:
    """Token ids of a chat whose assistant turn already begins with ``prefill``: ``P + F`` ids.

    The chat is rendered with the generation prompt (:func:`render_prompt`, ``P`` ids) and ``prefill`` is encoded on
    its own with ``add_special_tokens=False`` (``F`` ids) and appended, so the chat's ids are unchanged whatever the
    prefill. A backend given these ids generates the continuation only; the response the caller parses is
    ``prefill + continuation``.

    Args:
        tokenizer: a transformers tokenizer with a chat template.
        messages: the chat (system / user turns).
        prefill: the opening of the assistant's response; ``""`` gives the plain rendered prompt.

    Returns:
        The prompt token ids, ``(P + F,)``.

    Raises:
        ValueError: ``prefill`` is not a string, or it contains one of the tokenizer's special-token strings (it
            would encode as a control token, e.g. end the turn, rather than as text).
    """
    if not isinstance(prefill, str):
        raise ValueError(f"prefill: expected a str, got {type(prefill).__name__}")
    if is_token_ids(messages):  # type: ignore[arg-type]
        raise ValueError("messages: expected chat messages (a prefill continues the rendered assistant turn)")
    forged = [s for s in special_token_strings(tokenizer) if s in prefill]
    if forged:
        raise ValueError(f"prefill: expected plain text, got the special-token string(s) {forged}")
    ids = render_prompt(tokenizer, messages)
    if prefill:
        ids.extend(int(i) for i in tokenizer(prefill, add_special_tokens=False)["input_ids"])
    return ids
