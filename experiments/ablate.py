"""Reproduce the paper's ablation (arXiv 2602.02488, Table 1): ``python -m experiments.ablate [+setting=...]
[+profile=smoke|full]``.

The same app as the installed command ``rlanything ablate ...`` (:mod:`rlanything_core.ablation.app`: the arms, the
seeds, the outputs and the summary line are described there).
"""

from __future__ import annotations

from rlanything_core.ablation.app import cli, main, reference_table, results_folder

__all__ = ["cli", "main", "reference_table", "results_folder"]

if __name__ == "__main__":
    cli()
