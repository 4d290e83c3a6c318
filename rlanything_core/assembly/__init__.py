"""A run from a composed config: ``build_run(cfg) -> Run``; ``Run.loop.run()`` trains.

:func:`build_run` builds a setting's models, rollout backends, task pool, driver, evaluator, Fabric and loop
(``build.py`` says how).

The layer above the rest of the package (it builds from ``settings``, ``loop``, ``training`` and ``lightning``), and
the only one that reads a run's config (with OmegaConf and Hydra's ``instantiate``: the ``loop`` extra).
``rlanything train`` (:mod:`rlanything_core.assembly.train_app`) composes the config with Hydra and calls it. Without
the ``loop`` extra (or the ``llm`` one it pulls), importing this package raises
:class:`~rlanything_core.extras.MissingExtraError` naming the extra to install.
"""

from __future__ import annotations

from rlanything_core.extras import require_extra

require_extra("loop", "rlanything_core.assembly")  # before the imports below fail with a bare ModuleNotFoundError
require_extra("llm", "rlanything_core.assembly")

from rlanything_core.assembly.build import build_run  # noqa: E402
from rlanything_core.assembly.resolvers import register_resolvers  # noqa: E402
from rlanything_core.assembly.trainer import Run  # noqa: E402

register_resolvers()  # the shipped configs' ${add:...}: resolved whenever a composed config is read

__all__ = ["Run", "build_run"]
