"""The RLAnything loop without Lightning: turning an iteration's rollouts into training rows, scheduling tasks."""

from rlanything_core.loop.iteration import IterationData, TrainingRows, build_iteration
from rlanything_core.loop.protocol import IterationSource

__all__ = ["IterationData", "IterationSource", "TrainingRows", "build_iteration"]
