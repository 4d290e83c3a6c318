"""The Hydra apps that reproduce the paper's experiments (``train``, ``ablate``), their configs and helpers.

A package beside ``rlanything_core``, imported from the repository root (``from experiments.builders import build``);
the apps run as files or as modules from there: ``python experiments/train.py ...`` or ``python -m experiments.train``.
"""
