"""The Hydra apps that reproduce the paper's experiments (``train``, ``ablate``), their configs and helpers.

A package beside ``rlanything_core``, imported from the repository root (``from experiments.train import
run_training``); a run itself is the package's (``rlanything_core.assembly.build_run``). The apps run as files or as
modules from there: ``python experiments/train.py ...`` or ``python -m experiments.train``.
"""
