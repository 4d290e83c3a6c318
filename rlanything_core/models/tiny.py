"""Tiny causal LMs and a tiny chat tokenizer for fast, download-free unit tests.

``tiny_causal_lm`` builds a randomly initialized ``LlamaForCausalLM`` (same architecture family as SmolLM2) from a
transformers ``LlamaConfig``. ``tiny_chat_tokenizer`` builds a real byte-level tokenizer (256 byte tokens + the ChatML
special tokens, with a ChatML chat template) from the ``tokenizers`` library, so tests need no file at all;
``tiny_model_and_tokenizer`` pairs a tiny model with it, or with the cached SmolLM2 tokenizer.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import torch

from rlanything_core._validation import check_positive_int

__all__ = [
    "CHATML_TEMPLATE",
    "TINY_SPECIAL_TOKENS",
    "TokenizerKind",
    "tiny_causal_lm",
    "tiny_chat_tokenizer",
    "tiny_model_and_tokenizer",
]

TINY_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Special tokens of the tiny tokenizer, ids 256, 257, 258 (after the 256 byte tokens)."""

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""A plain ChatML template (SmolLM2's own, without its default system message)."""


class TokenizerKind(str, Enum):
    """Which tokenizer ``tiny_model_and_tokenizer`` pairs with the tiny model."""

    TINY = "tiny"
    """The byte-level :func:`tiny_chat_tokenizer` (vocab 259; no file needed)."""
    SMOLLM2 = "smollm2"
    """The SmolLM2 tokenizer from the cache (vocab 49,152; builds the cache on first use)."""


def tiny_causal_lm(
    vocab_size: int = 259,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 1024,
    seed: int = 0,
    pad_token_id: int | None = None,
    eos_token_id: int | None = None,
    bos_token_id: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> Any:
    """Build a randomly initialized tiny ``LlamaForCausalLM`` (deterministic given ``seed``).

    Args:
        vocab_size: number of token ids (match the tokenizer: ``len(tokenizer)``).
        hidden: hidden size (divisible by ``heads``).
        layers: number of decoder layers.
        heads: attention heads (divisible by ``kv_heads``).
        kv_heads: key/value heads (grouped-query attention, as in SmolLM2).
        max_positions: maximum sequence length.
        seed: initialization seed (a local generator; global RNG state is restored afterwards).
        pad_token_id: written into the config (and generation config).
        eos_token_id: written into the config.
        bos_token_id: written into the config.
        dtype: parameter dtype.

    Returns:
        A ``LlamaForCausalLM`` in eval mode.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    for name, value in (("vocab_size", vocab_size), ("hidden", hidden), ("layers", layers), ("heads", heads),
                        ("kv_heads", kv_heads), ("max_positions", max_positions)):
        check_positive_int(name, value)
    if hidden % heads:
        raise ValueError(f"hidden: expected a multiple of heads={heads}, got {hidden}")
    if heads % kv_heads:
        raise ValueError(f"kv_heads: expected a divisor of heads={heads}, got {kv_heads}")
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=bos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model: Any = LlamaForCausalLM(config)
    model = model.to(dtype=dtype)
    model.eval()
    return model


def tiny_chat_tokenizer() -> Any:
    """Build a byte-level chat tokenizer with the ChatML special tokens and template, from nothing on disk.

    Ids 0-255 are the bytes (GPT-2 byte-to-unicode alphabet, no merges), then ``<|endoftext|>`` (256),
    ``<|im_start|>`` (257), ``<|im_end|>`` (258). ``eos_token`` is ``<|im_end|>`` (end of an assistant turn) and
    ``pad_token`` is ``<|endoftext|>``; padding is on the left. Every text round-trips through encode/decode.

    Returns:
        A ``transformers.PreTrainedTokenizerFast``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_to_char = _bytes_to_unicode()
    vocab = {byte_to_char[b]: b for b in range(256)}
    if set(vocab) != set(alphabet):  # pragma: no cover - guards a tokenizers change
        raise RuntimeError("tokenizers' ByteLevel alphabet changed; tiny_chat_tokenizer needs updating")
    for offset, token in enumerate(TINY_SPECIAL_TOKENS):
        vocab[token] = 256 + offset
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=list(TINY_SPECIAL_TOKENS),
        padding_side="left",
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode map (the alphabet of byte-level BPE)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def tiny_model_and_tokenizer(
    tokenizer: TokenizerKind | str = TokenizerKind.TINY,
    *,
    hidden: int = 64,
    layers: int = 2,
    seed: int = 0,
    max_positions: int = 4096,
) -> tuple[Any, Any]:
    """Pair a tiny random model with a chat tokenizer whose vocabulary it covers.

    Args:
        tokenizer: ``"tiny"`` (no file needed) or ``"smollm2"`` (cached SmolLM2 tokenizer, vocab 49,152).
        hidden: hidden size of the model.
        layers: number of layers.
        seed: model initialization seed.
        max_positions: context length (rotary positions: no parameters depend on it).

    Returns:
        ``(model, tokenizer)`` with the tokenizer padding on the left and the model's pad/eos ids set from it.
    """
    kind = TokenizerKind(tokenizer)
    if kind is TokenizerKind.TINY:
        tok = tiny_chat_tokenizer()
    else:
        from rlanything_core.models.smollm2 import load_smollm2_tokenizer

        tok = load_smollm2_tokenizer()
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
    model = tiny_causal_lm(
        len(tok),
        hidden=hidden,
        layers=layers,
        seed=seed,
        max_positions=max_positions,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
    )
    return model, tok
