"""The RLAnything loop without Lightning: turning an iteration's rollouts into training rows, scheduling tasks."""

from rlanything_core.loop.iteration import IterationData, TrainingRows, build_iteration

__all__ = ["IterationData", "TrainingRows", "build_iteration"]
