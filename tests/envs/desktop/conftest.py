"""Fixtures of the desktop tests that need the real apps: one desktop environment for the session (one display and
one LibreOffice profile), and, per module, a bare display and an app uid for the app-sandbox tests."""

from __future__ import annotations

import os
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


@pytest.fixture(scope="module")
def uid() -> Iterator[int | None]:
    """An app uid of the desktop range, held like an environment holds it (``None`` when not root)."""
    if os.getuid() != 0:
        yield None
        return
    from rlanything_core.envs.desktop.env import DESKTOP_UID_BASE, DESKTOP_UID_SLOTS
    from rlanything_core.sandbox.slots import UidSlots

    with UidSlots(DESKTOP_UID_BASE, DESKTOP_UID_SLOTS).acquire() as slot:
        yield slot.program_uid


@pytest.fixture(scope="module")
def display() -> Iterator[object]:
    """A bare X display (no window manager) for the module."""
    if desktop_missing():
        pytest.skip(desktop_missing())
    from rlanything_core.envs.desktop.display import XDisplay

    with XDisplay() as d:
        yield d
