"""The paper's ablation (arXiv 2602.02488, Table 1) end to end: ``rlanything ablate [+setting=...] [+profile=...]``.

- :mod:`~rlanything_core.ablation.app`: the Hydra app (validate, estimate, run every arm over every seed, write the
  table, the plots and the summary line).
- :mod:`~rlanything_core.ablation.runs`: one seed's runs (warm start, the "before" evaluation, each arm), resumable.
- :mod:`~rlanything_core.ablation.workers`: the runs in ``jobs`` worker processes.
- :mod:`~rlanything_core.ablation.reuse`: finished runs of another results folder reused when identical.
- :mod:`~rlanything_core.ablation.budget`: what an ablation should cost, before it starts.

- :mod:`~rlanything_core.ablation.warm_start_encoder`: the supervised warm start of the encoder-scorer policy
  (``model=minilm-scorer``, the ALFWorld default) on the hand-coded expert;
  ``python -m rlanything_core.ablation.warm_start_encoder``.
- :mod:`~rlanything_core.ablation.warm_start`: the same for the tiny LM policy; ``python -m
  rlanything_core.ablation.warm_start``.

Reading finished runs back (statistics, tables, plots) is :mod:`rlanything_core.analysis`.
"""

__all__: list[str] = []
