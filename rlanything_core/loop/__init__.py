"""The RLAnything loop: ``RLAnythingLoop`` (the iteration top to bottom), the contracts it calls, the row building."""

from rlanything_core.loop.iteration import IterationData, build_iteration
from rlanything_core.loop.protocol import Collectives, IterationSource, Rollouts, Runtime, Update
from rlanything_core.loop.rlanything_loop import RLAnythingLoop

__all__ = [
    "Collectives",
    "IterationData",
    "IterationSource",
    "RLAnythingLoop",
    "Rollouts",
    "Runtime",
    "Update",
    "build_iteration",
]
