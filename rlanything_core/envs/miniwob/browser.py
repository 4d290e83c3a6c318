"""One headless Chromium driven by Selenium, showing MiniWoB++ pages (the wheel's, or this library's own).

The binaries come from ``MINIWOB_CHROME_BINARY`` / ``MINIWOB_CHROMEDRIVER`` (default: Debian's ``/usr/bin/chromium``
and ``/usr/bin/chromedriver``); naming them stops Selenium from looking for a browser on the network. A browser that
does not start raises :class:`BrowserStartError` naming the binaries and the variables.

Each page ends its own episode after 7-30 s of wall time, which a CPU policy can exceed; :meth:`Browser.open` sets
``core.EPISODE_MAX_TIME`` to 1e9 ms, so only the task's checker (or the agent) ends an episode.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = [
    "CHROME_ENV",
    "DRIVER_ENV",
    "TAG_ENV",
    "Browser",
    "BrowserStartError",
    "browser_binaries",
    "own_pages_url",
    "page_url",
    "remove_profiles_of",
    "tagged_browser_pids",
]

TAG_ENV = "RLANYTHING_BROWSER_TAG"
"""Every driver and browser process carries this variable in its environment (default ``rlanything``), so a process
scan can find any browser this library left behind (see :func:`tagged_browser_pids`)."""
CHROME_ENV = "MINIWOB_CHROME_BINARY"
DRIVER_ENV = "MINIWOB_CHROMEDRIVER"
_DEFAULT_CHROME = "/usr/bin/chromium"
_DEFAULT_DRIVER = "/usr/bin/chromedriver"
PAGES_DIR = Path(__file__).resolve().parent / "pages"
"""This library's parameterized task pages (``rla-*.html``)."""


class BrowserStartError(RuntimeError):
    """The browser or its driver could not be started (the message names both binaries and the variables)."""


def browser_binaries() -> tuple[str, str]:
    """``(chromium, chromedriver)`` paths: the environment variables, else Debian's paths.

    Raises:
        BrowserStartError: a binary does not exist or is not executable.
    """
    chrome = os.environ.get(CHROME_ENV) or _DEFAULT_CHROME
    driver = os.environ.get(DRIVER_ENV) or _DEFAULT_DRIVER
    for path in (chrome, driver):
        if shutil.which(path) is None:
            raise BrowserStartError(
                f"browser binary {path!r} not found or not executable; install Debian's chromium and "
                f"chromium-driver (apt-get install -y chromium chromium-driver) or set {CHROME_ENV} and {DRIVER_ENV} "
                f"(now: {CHROME_ENV}={os.environ.get(CHROME_ENV)!r}, {DRIVER_ENV}={os.environ.get(DRIVER_ENV)!r})"
            )
    return chrome, driver


def tagged_browser_pids(tag: str | None = None) -> list[int]:
    """Live processes of the browsers tagged ``tag`` (drivers, Chromium processes, crash handlers).

    Drivers and crash handlers carry ``RLANYTHING_BROWSER_TAG=tag`` in their environment; every Chromium process
    carries its ``--user-data-dir``, whose name holds the tag.

    Args:
        tag: the tag to look for (default: this process's ``RLANYTHING_BROWSER_TAG``, else ``rlanything``).
    """
    import psutil

    tag = tag or os.environ.get(TAG_ENV, "rlanything")
    marker = f"rlanything-browser-{tag}-"
    found = []
    for proc in psutil.process_iter(["name", "status", "cmdline"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or "chrom" not in (proc.info["name"] or ""):
            continue
        try:
            if any(marker in arg for arg in proc.info["cmdline"] or ()) or proc.environ().get(TAG_ENV) == tag:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def remove_profiles_of(pid: int) -> None:
    """Delete the profile folders of browsers that process ``pid`` started (after it was killed with them)."""
    for folder in Path(tempfile.gettempdir()).glob(f"rlanything-browser-*-{int(pid)}-*"):
        shutil.rmtree(folder, ignore_errors=True)


def _wheel_html() -> Path:
    from rlanything_core.envs.miniwob.catalog import wheel_html_dir

    return wheel_html_dir()


def own_pages_url(folder: str | Path | None = None) -> str:
    """A ``file://`` base URL serving a folder of pages beside the wheel's ``core/`` and ``common/`` folders.

    The pages load ``../core/core.js``: a per-user folder under the temp dir links ``core``, ``common`` and the
    page folder side by side (this package's ``pages/`` as ``rlanything``, one's own folder as ``own-<hash of its
    path>``). Links are created atomically (rename), so concurrent workers never see a half-built folder.

    Args:
        folder: a folder of one's own pages (``None``: this library's ``pages/``).
    """
    site = Path(tempfile.gettempdir()) / f"rlanything-miniwob-{os.getuid()}"
    site.mkdir(exist_ok=True)
    if folder is None:
        name, target = "rlanything", PAGES_DIR
    else:
        target = Path(folder).resolve()
        name = "own-" + hashlib.sha1(str(target).encode()).hexdigest()[:12]
    links = {"core": _wheel_html() / "core", "common": _wheel_html() / "common", name: target}
    for link_name, link_target in links.items():
        link = site / link_name
        if link.is_symlink() and Path(os.readlink(link)) == link_target:
            continue
        tmp = site / f".{link_name}.{os.getpid()}"
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(link_target)
        os.replace(tmp, link)
    return f"file://{site}/{name}/"


def page_url(name: str, *, own_page: bool, folder: str | Path | None = None) -> str:
    """The URL of task page ``name`` (``click-button`` -> ``.../click-button.html``).

    Args:
        name: the page name.
        own_page: a page of this library (``pages/``) or of ``folder``, not the wheel's.
        folder: the folder of one's own page (``None``: this library's ``pages/`` when ``own_page``).
    """
    base = own_pages_url(folder) if own_page else f"file://{_wheel_html()}/miniwob/"
    return f"{base}{name}.html"


class Browser:
    """A headless Chromium with one MiniWoB++ page open.

    Args:
        timeout_s: Selenium's page-load and script timeout (a hung page raises instead of blocking forever).
        screenshots: take a screenshot per observation.

    Raises:
        BrowserStartError: the browser or its driver does not start.
    """

    def __init__(self, *, timeout_s: float = 20.0, screenshots: bool = True) -> None:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        chrome, driver = browser_binaries()
        options = webdriver.ChromeOptions()
        for arg in ("headless", "disable-gpu", "no-sandbox", "disable-dev-shm-usage", "disable-extensions",
                    "window-size=800,600"):  # fmt: skip
            options.add_argument(arg)
        options.binary_location = chrome
        tag = os.environ.get(TAG_ENV, "rlanything")
        self.service = Service(executable_path=driver, env={**os.environ, TAG_ENV: tag})
        # Every Chromium process repeats --user-data-dir on its command line (its environment is overwritten by the
        # process titles of the zygotes): the folder's name carries the tag for tagged_browser_pids.
        self.profile_dir = tempfile.mkdtemp(prefix=f"rlanything-browser-{tag}-{os.getpid()}-")
        options.add_argument(f"user-data-dir={self.profile_dir}")
        try:
            self.driver: Any = webdriver.Chrome(service=self.service, options=options)
        except WebDriverException as err:
            self._kill_service()
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            raise BrowserStartError(
                f"Chromium did not start (browser {chrome!r}, driver {driver!r}; set {CHROME_ENV} / {DRIVER_ENV} to "
                f"change them): {str(err).strip()[:300]}"
            ) from err
        self.driver.set_page_load_timeout(timeout_s)
        self.driver.set_script_timeout(timeout_s)
        self.driver.implicitly_wait(0)
        self.screenshots = screenshots
        self.url: str | None = None
        self.inner_size = (0, 0)

    def pids(self) -> list[int]:
        """Process ids of the driver and every browser process below it."""
        import psutil

        proc = getattr(self.service, "process", None)
        if proc is None:
            return []
        try:
            root = psutil.Process(proc.pid)
            return [root.pid, *(p.pid for p in root.children(recursive=True))]
        except psutil.Error:
            return []

    def open(self, url: str) -> None:
        """Load ``url`` (once per page; later episodes of the same page only reset it) and lift its time limit."""
        if url != self.url:
            self.driver.get(url)
            deadline = time.monotonic() + 10
            while not self.driver.execute_script("return typeof core !== 'undefined' && !!core.startEpisodeReal;"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"page {url} did not load its MiniWoB++ core")
                time.sleep(0.05)
            self.url = url
            self.inner_size = tuple(self.driver.execute_script("return [window.innerWidth, window.innerHeight];"))
        self.driver.execute_script("core.EPISODE_MAX_TIME = 1e9;")  # pages set their own at load; lift it every time

    def begin(self, seed: int, settings: dict[str, int] | None = None) -> None:
        """End any running episode, seed the page's generator, publish the settings, start a new episode."""
        d = self.driver
        d.execute_script("if (typeof WOB_DONE_GLOBAL !== 'undefined' && !WOB_DONE_GLOBAL) core.endEpisode(0);")
        d.execute_script(f"Math.seedrandom({int(seed)}); window.RLA_SETTINGS = arguments[0];", settings or {})
        d.execute_script('core.setDataMode("train"); core.EPISODE_MAX_TIME = 1e9; core.startEpisodeReal();')
        for _ in range(40):
            if d.execute_script("return WOB_TASK_READY;"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"page {self.url} did not become ready after its reset")

    def utterance(self) -> tuple[str, list[tuple[str, str]] | None]:
        """The instruction, and its fields when the page provides them (else ``None``)."""
        response = self.driver.execute_script("return core.getUtterance();")
        if isinstance(response, dict):
            return str(response["utterance"]), [(str(k), str(v)) for k, v in response["fields"].items()]
        return str(response), None

    def dom(self) -> Any:
        """The page's DOM as MiniWoB++'s ``DOMElement`` tree (refs are stable within an episode)."""
        from miniwob.dom import DOMElement

        return DOMElement(self.driver.execute_script("return core.getDOMInfo();"))

    def screenshot(self) -> Any:
        """The task area as a ``(210, 160, 3)`` ``uint8`` array, or ``None`` when switched off."""
        if not self.screenshots:
            return None
        from miniwob.constants import TASK_HEIGHT, TASK_WIDTH
        from miniwob.screenshot import get_screenshot, pil_to_numpy_array

        image = get_screenshot(self.driver, true_width=self.inner_size[0], true_height=self.inner_size[1],
                               crop_width=TASK_WIDTH, crop_height=TASK_HEIGHT)  # fmt: skip
        return pil_to_numpy_array(image)

    def status(self) -> dict[str, Any]:
        """``{"done", "raw_reward", "reason"}`` of the current episode (the raw reward, never time-discounted)."""
        return dict(
            self.driver.execute_script(
                'return {"done": WOB_DONE_GLOBAL, "raw_reward": WOB_RAW_REWARD_GLOBAL, "reason": WOB_REWARD_REASON};'
            )
        )

    def click(self, ref: int) -> str | None:
        """Click element ``ref`` through the page's own ``core.elementClick``; returns an error text or ``None``."""
        result = self.driver.execute_script(f"return core.elementClick({int(ref)});")
        return None if result is True else str(result)

    def type_into(self, ref: int, text: str) -> str | None:
        """Focus element ``ref`` (a click), then type ``text`` key by key; returns an error text or ``None``."""
        from miniwob.selenium_actions import execute_type_text

        error = self.click(ref)
        if error is not None:
            return error
        execute_type_text(text, self.driver)
        return None

    def press(self, key: str) -> None:
        """Press ``key`` (MiniWoB++'s syntax: ``<Enter>``, ``C-a``, ...)."""
        from miniwob.selenium_actions import execute_press_key

        execute_press_key(key, self.driver)

    def release_inputs(self) -> None:
        """Release every key and mouse button that an interrupted action chain may have left pressed."""
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).reset_actions()

    def _kill_service(self) -> None:
        import psutil

        for pid in reversed(self.pids()):
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass

    def quit(self) -> None:
        """Quit the browser; whatever survives ``driver.quit`` (a crashed or hung browser) is killed."""
        pids = self.pids()
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001 - a dead browser cannot quit cleanly; its processes are killed below
            pass
        import psutil

        for pid in pids:
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        shutil.rmtree(self.profile_dir, ignore_errors=True)
