"""rlanything_core: composable primitives for closed-loop RL of LLM agents (RLAnything, Wang et al., 2026)."""

from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.types import LossOutput, StepBatch

__all__ = ["EPS", "FORMAT_PENALTY", "LossOutput", "StepBatch"]
__version__ = "0.1.0"
