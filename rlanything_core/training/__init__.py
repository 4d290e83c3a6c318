"""Training-side helpers: token log-probs under a causal LM and length-aware micro-batching."""

from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.microbatch import pack_by_length, padded_token_count

__all__ = ["pack_by_length", "padded_token_count", "sequence_token_logprobs"]
