"""The documentation site, built strictly and opened in a real headless Chromium.

Builds the site with ``mkdocs build --strict`` (the same build CI gates on), serves it on the loopback address and
checks three pages as a reader sees them: the home page, an API page whose docstring holds an equation (typeset by
KaTeX), and a tutorial page with a plot (the PNG loaded). The browser's console must stay free of errors. A screenshot
of each page is written to ``$RLANYTHING_DOCS_SCREENSHOTS`` (default: ``site/screenshots`` under the repository).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("RLANYTHING_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RLANYTHING_CHROMEDRIVER", "/usr/bin/chromedriver")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO / "docs" / "vendor" / "katex" / "katex.min.js").exists():
        pytest.fail("docs/vendor/katex is missing: run `make docs-assets` (npm pack katex) first")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} missing: `apt-get install chromium chromium-driver` (.ci/run does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000", "--disable-dev-shm-usage"
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def screenshots() -> Path:
    out = Path(os.environ.get("RLANYTHING_DOCS_SCREENSHOTS", REPO / "site" / "screenshots"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _open(driver, url: str, shot: Path) -> None:  # type: ignore[no-untyped-def]
    driver.get(url)
    driver.execute_script("return document.readyState")
    driver.save_screenshot(str(shot))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"console errors on {url}: {errors}"


def test_home_page(browser, base_url: str, screenshots: Path) -> None:  # type: ignore[no-untyped-def]
    _open(browser, f"{base_url}/", screenshots / "home.png")
    assert "rlanything" in browser.title
    body = browser.find_element("tag name", "body").text
    assert "make main" in body and "make test" in body


def test_api_page_typesets_its_equation(browser, base_url: str, screenshots: Path) -> None:  # type: ignore[no-untyped-def]
    _open(
        browser,
        f"{base_url}/api/advantages/#rlanything_core.advantages.functional.integrated_step_reward",
        screenshots / "api_advantages.png",
    )
    assert "integrated_step_reward" in browser.page_source
    typeset = browser.execute_script("return document.querySelectorAll('.arithmatex .katex-display').length")
    raw = browser.execute_script(
        "return [...document.querySelectorAll('.arithmatex')].filter(e => !e.querySelector('.katex')).length"
    )
    assert typeset >= 1, "no display equation was typeset on the API page"
    assert raw == 0, f"{raw} equations left as raw TeX"


def test_tutorial_page_shows_its_plot(browser, base_url: str, screenshots: Path) -> None:  # type: ignore[no-untyped-def]
    _open(browser, f"{base_url}/tutorials/01_primitives/", screenshots / "tutorial_01.png")
    loaded = browser.execute_script(
        "return [...document.images].filter(i => i.complete && i.naturalWidth > 100).length"
    )
    assert loaded >= 1, "the tutorial page shows no plot: is the notebook committed with its outputs?"
