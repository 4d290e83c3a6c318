"""Generation backends behind one Protocol (transformers, vLLM), prompt rendering, and output parsers.

``vllm`` is imported only when a :class:`VLLMBackend` is constructed.
"""

from rlanything_core.generation.parsing import parse_action_index, parse_boxed, parse_vote
from rlanything_core.generation.prompts import render_chat, render_prompt, sanitize_untrusted, special_token_strings
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import FinishReason, Generation, GenerationBackend, Prompt, SamplingParams
from rlanything_core.generation.vllm_backend import VLLMBackend, vllm_available

__all__ = [
    "FinishReason",
    "Generation",
    "GenerationBackend",
    "Prompt",
    "SamplingParams",
    "TransformersBackend",
    "VLLMBackend",
    "parse_action_index",
    "parse_boxed",
    "parse_vote",
    "render_chat",
    "render_prompt",
    "sanitize_untrusted",
    "special_token_strings",
    "vllm_available",
]
