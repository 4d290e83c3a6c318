"""Lightning wiring of the RLAnything loop (the only package importing ``lightning``)."""

from rlanything_core.lightning.checkpoint import IterationCheckpoint, atomic_save_checkpoint
from rlanything_core.lightning.datamodule import IterationStream, RolloutDataModule
from rlanything_core.lightning.module import RLAnythingModule
from rlanything_core.lightning.settings import AgentModule, ALFWorldModule, CodingModule, TextWorldModule

__all__ = [
    "ALFWorldModule",
    "AgentModule",
    "CodingModule",
    "IterationCheckpoint",
    "IterationStream",
    "RLAnythingModule",
    "RolloutDataModule",
    "TextWorldModule",
    "atomic_save_checkpoint",
]
