"""``python -m rlanything_core.ablation [overrides ...]``: the ablation app (what the seed workers run)."""

from __future__ import annotations

from rlanything_core.ablation.app import cli

__all__: list[str] = []

if __name__ == "__main__":
    cli()
