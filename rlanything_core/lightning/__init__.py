"""The Lightning Fabric adapter of the RLAnything loop (the only package importing ``lightning``).

Devices, strategies, precision, checkpoint files and loggers behind ``loop.protocol.Runtime``.
"""

from rlanything_core.lightning.checkpoint import atomic_save
from rlanything_core.lightning.fabric_runtime import FabricRuntime

__all__ = ["FabricRuntime", "atomic_save"]
