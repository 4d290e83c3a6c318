"""The ablation's orchestration inside the package, so that an installed ``rlanything ablate`` needs no checkout.

- :mod:`~rlanything_core.ablation.warm_start_encoder`: the supervised warm start of the encoder-scorer policy
  (``model=minilm-scorer``, the ALFWorld default) on the hand-coded expert;
  ``python -m rlanything_core.ablation.warm_start_encoder``.
- :mod:`~rlanything_core.ablation.warm_start`: the same for the tiny LM policy; ``python -m
  rlanything_core.ablation.warm_start``.
"""

from __future__ import annotations

__all__ = ["warm_start", "warm_start_encoder"]
