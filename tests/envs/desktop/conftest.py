"""One display and one LibreOffice profile shared by the desktop tests that need the real app (a session fixture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _desktop_apps import desktop_missing


@pytest.fixture(scope="session")
def desktop_env() -> Iterator[object]:
    """A :class:`LocalDesktopEnv` for the whole session; closed (and checked closed) at the end."""
    reason = desktop_missing()
    if reason:
        pytest.skip(reason)
    from rlanything_core.envs.desktop.env import LocalDesktopEnv

    env = LocalDesktopEnv(settle_s=0.15, screenshots=False, action_timeout_s=20.0)
    try:
        yield env
    finally:
        env.close()
        assert not env.display.alive and not env.office.pids()
