"""The entry points that reproduce the paper's experiments: ``train`` and ``ablate``, thin shells over the package.

Run from the repository root as modules (``python -m experiments.train ...``, ``python -m experiments.ablate ...``)
or, installed, as the command ``rlanything train|ablate ...``; the apps themselves are the package's
(:mod:`rlanything_core.assembly.train_app`, :mod:`rlanything_core.ablation.app`).
"""
