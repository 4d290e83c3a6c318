"""A run from a composed config: ``build_run(cfg) -> Run``; ``Run.loop.run()`` trains.

:func:`build_run` builds a setting's models, rollout backends, task pool, driver, evaluator, Fabric and loop
(``build.py`` says how).

The layer above the rest of the package (it builds from ``settings``, ``loop``, ``training`` and ``lightning``), and
the only one that reads a run's config (with OmegaConf and Hydra's ``instantiate``: the ``loop`` extra).
``experiments/train.py`` composes the config with Hydra and calls it.
"""

from __future__ import annotations

from rlanything_core.assembly.build import build_run
from rlanything_core.assembly.resolvers import register_resolvers
from rlanything_core.assembly.trainer import Run

register_resolvers()  # the shipped configs' ${add:...}: resolved whenever a composed config is read

__all__ = ["Run", "build_run"]
