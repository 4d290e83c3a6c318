"""The error every config check raises: the key, the problem and the fix."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config that cannot work: names the dotted key, the problem and the fix.

    Attributes:
        key: the dotted config key at fault (``optim.policy_lr``, ``setting``).
    """

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"config key '{key}': {problem}. Fix: {fix}")
        self.key = key
