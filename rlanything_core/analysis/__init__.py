"""Analysis of measured results: statistics over finished runs' and studies' records (no training, no collection)."""

__all__: list[str] = []
