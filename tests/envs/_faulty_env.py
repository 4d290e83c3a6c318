"""Fault injection around a real env, for the pool tests: special commands make the worker hang, raise or die.

Lives in its own module so that spawned worker processes can unpickle the factory.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

HANG, RAISE, DIE = "__hang__", "__raise__", "__die__"


class FaultyEnv:
    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self) -> Any:
        return self.env.reset()

    def step(self, action: str) -> Any:
        if action == HANG:
            time.sleep(3600)
        if action == RAISE:
            raise RuntimeError("engine exploded")
        if action == DIE:
            os._exit(3)
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class FaultyFactory:
    inner: Any

    def __call__(self, game: Any) -> FaultyEnv:
        return FaultyEnv(self.inner(game))
