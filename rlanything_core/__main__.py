"""``python -m rlanything_core train|evaluate|ablate ...``: the ``rlanything`` command (:mod:`rlanything_core.cli`)."""

from __future__ import annotations

from rlanything_core.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main())
