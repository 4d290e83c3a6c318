"""The error every config check raises: the key, the problem and the fix (its own module, so that the checks and the
settings they call can both import it without importing each other)."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config that cannot work: names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"config key '{key}': {problem}. Fix: {fix}")
        self.key = key
