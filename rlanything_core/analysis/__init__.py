"""Analysis of finished ablation runs: reading them back, statistics over seeds, tables, plots, breakdowns, power.

- :mod:`~rlanything_core.analysis.results`: a run folder's metrics and evaluation episodes (``ArmRun``).
- :mod:`~rlanything_core.analysis.stats`: intervals over seeds, the paired seed-level bootstrap, curves (pure).
- :mod:`~rlanything_core.analysis.power`: the design's minimum detectable difference.
- :mod:`~rlanything_core.analysis.table`: the ablation table (markdown, csv) and its verdict.
- :mod:`~rlanything_core.analysis.plots`: curves per arm and the forest plot of paired differences.
- :mod:`~rlanything_core.analysis.breakdown`: success by seed, split and task type of ``episodes.csv`` files
  (``python -m rlanything_core.analysis.breakdown <results folder> ...``).
- :mod:`~rlanything_core.analysis.summary`: the results page's forest plot over the committed folders
  (``python -m rlanything_core.analysis.summary``).
- :mod:`~rlanything_core.analysis.judge_steps`: a judge's process AUC and balanced accuracy on labelled steps, by task
  type, with game-level bootstrap intervals and paired differences between judges.
"""

__all__: list[str] = []
