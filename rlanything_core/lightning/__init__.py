"""Lightning wiring of the RLAnything loop (the only package importing ``lightning``)."""

from rlanything_core.lightning.checkpoint import IterationCheckpoint, atomic_save_checkpoint
from rlanything_core.lightning.datamodule import IterationStream, RolloutDataModule
from rlanything_core.lightning.module import RLAnythingModule
from rlanything_core.lightning.settings import AgentModule

__all__ = [
    "AgentModule",
    "IterationCheckpoint",
    "IterationStream",
    "RLAnythingModule",
    "RolloutDataModule",
    "atomic_save_checkpoint",
]
