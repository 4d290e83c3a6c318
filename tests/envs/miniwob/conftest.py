from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest


def require_browser() -> None:
    """Skip (naming the apt packages) where Debian's Chromium and its driver are not installed."""
    pytest.importorskip("miniwob", reason="PyPI miniwob==1.1.0 is not installed (pip install -e '.[gui]')")
    from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries

    try:
        browser_binaries()
    except BrowserStartError as err:
        pytest.skip(f"apt packages chromium and chromium-driver are not installed: {err}")


@pytest.fixture(scope="module")
def browser_tag() -> Iterator[str]:
    """A tag unique to this test module in every browser it starts; after the module, none of them may be alive."""
    require_browser()
    from rlanything_core.envs.miniwob.browser import TAG_ENV, tagged_browser_pids
    from rlanything_core.envs.miniwob.env import shutdown_browsers

    tag = f"test-{uuid.uuid4().hex[:8]}"
    old = os.environ.get(TAG_ENV)
    os.environ[TAG_ENV] = tag
    try:
        yield tag
        shutdown_browsers()
        assert tagged_browser_pids(tag) == [], "browsers left behind"
    finally:
        if old is None:
            os.environ.pop(TAG_ENV, None)
        else:
            os.environ[TAG_ENV] = old
