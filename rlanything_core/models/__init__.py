"""Models: the real small LLM (SmolLM2-135M-Instruct, offline) and tiny random models for unit tests."""

from rlanything_core.models.smollm2 import (
    default_cache_dir,
    gguf_path,
    load_smollm2,
    load_smollm2_tokenizer,
    smollm2_path,
)
from rlanything_core.models.tiny import TokenizerKind, tiny_causal_lm, tiny_chat_tokenizer, tiny_model_and_tokenizer

__all__ = [
    "TokenizerKind",
    "default_cache_dir",
    "gguf_path",
    "load_smollm2",
    "load_smollm2_tokenizer",
    "smollm2_path",
    "tiny_causal_lm",
    "tiny_chat_tokenizer",
    "tiny_model_and_tokenizer",
]
