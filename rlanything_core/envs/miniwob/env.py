"""MiniWoB++ as a ``GuiEnv``: any MiniWoB++ page in a real headless Chromium, stepped with action strings.

Actions (``render.py``): ``click [ref]``, ``type "text" into [ref]``, ``press <Key>``, ``wait`` (let the page's own
delays run: autocomplete lists, animations), ``show more elements`` (the next page of elements on a page with more
than ``max_clicks``), ``DONE`` and ``FAIL``. Anything else, an unknown key, text the browser cannot type or an
element that is gone is an invalid action: counted, named in the next observation, and the browser is kept.

A process keeps its browsers between episodes (``_IDLE``): an episode borrows one at ``reset`` and gives it back at
``close``, so a worker starts a browser only when it hosts more live episodes than ever before, and loading a page it
already shows costs only the page's own reset (~0.1 s). A browser that raised is quit, never given back. When the
process ends, its browsers are quit (``multiprocessing.util.Finalize`` in pool workers, ``atexit`` otherwise).

Outcome: the page's own JavaScript checker, its raw reward in ``[-1, 1]`` (``WOB_RAW_REWARD_GLOBAL``, not the
time-discounted one); ``won`` means ``reward > 0``.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import re
import time
from dataclasses import dataclass
from typing import Any

from rlanything_core._validation import check_positive_int
from rlanything_core.envs.gui import GuiEpisode
from rlanything_core.envs.miniwob.browser import Browser, page_url
from rlanything_core.envs.miniwob.render import (
    MORE_ACTION,
    ActionKind,
    ElementView,
    candidate_actions,
    element_page,
    flatten_dom,
    key_error,
    parse_action,
    render_dom,
    text_error,
)
from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec
from rlanything_core.envs.protocols import GUI_MAX_STEPS, GuiObservation, GuiOutcome, GuiStep

__all__ = ["MiniwobEnv", "MiniwobEnvFactory", "as_spec", "idle_browsers", "shutdown_browsers"]

_IDLE: list[Browser] = []
_LIVE: list[Browser] = []
_FINALIZER_SET = False


def _quit_all() -> None:
    for browser in list(_LIVE):
        browser.quit()
    _LIVE.clear()
    _IDLE.clear()


def shutdown_browsers() -> None:
    """Quit every browser this process started (idle or borrowed)."""
    _quit_all()


def idle_browsers() -> int:
    """Browsers of this process waiting for an episode."""
    return len(_IDLE)


def _borrow(*, timeout_s: float, screenshots: bool) -> Browser:
    global _FINALIZER_SET
    if not _FINALIZER_SET:
        atexit.register(_quit_all)
        multiprocessing.util.Finalize(None, _quit_all, exitpriority=100)  # pool workers end with os._exit
        _FINALIZER_SET = True
    browser = _IDLE.pop() if _IDLE else None
    if browser is None:
        browser = Browser(timeout_s=timeout_s, screenshots=screenshots)
        _LIVE.append(browser)
    browser.screenshots = screenshots
    return browser


def _give_back(browser: Browser, *, healthy: bool) -> None:
    if healthy:
        _IDLE.append(browser)
        return
    browser.quit()
    if browser in _LIVE:
        _LIVE.remove(browser)


def as_spec(task: Any) -> MiniwobTaskSpec:
    """A ``MiniwobTaskSpec`` from a spec, a pool task's ``data`` dict, or a bare task name (seed 0).

    Raises:
        UnknownTaskError: the name is not curated (the message lists the curated names).
    """
    if isinstance(task, MiniwobTaskSpec):
        return task
    if isinstance(task, dict):
        return MiniwobTaskSpec.from_data(task)
    if isinstance(task, str):
        return MiniwobTaskSpec(task)
    raise TypeError(f"task: expected a MiniwobTaskSpec, a dict or a task name, got {type(task).__name__}")


class MiniwobEnv:
    """One MiniWoB++ episode at a time in a borrowed headless Chromium.

    Args:
        max_steps: the episode's step limit (enforced by :class:`~rlanything_core.envs.gui.GuiEpisode`).
        screenshots: keep a ``(210, 160, 3)`` screenshot in every observation (for VL policies; ~10 ms a step).
        timeout_s: Selenium's script/page timeout.
        offer_done: list ``DONE`` among the candidates (the env accepts ``DONE``/``FAIL`` either way). MiniWoB++
            checkers fire by themselves, and a likelihood scorer over summed log-probs favours the one-word ``DONE``
            (a tiny policy chose it on 36 of 36 episodes over 9 pages): CPU configs may leave it out.
        offer_wait: list ``wait`` among the candidates (the env accepts it either way). Off by default: like
            ``DONE``, a one-word candidate draws a fresh likelihood scorer, and only pages with delayed content
            (autocomplete lists, animations) need it.
        wait_s: how long ``wait`` lets the page run before the next observation (autocomplete lists, animations).
        max_clicks: elements per candidate page: a page with more elements is shown a page at a time, the elements
            the instruction mentions first, and ``show more elements`` turns the page.
    """

    def __init__(
        self, *, max_steps: int = GUI_MAX_STEPS, screenshots: bool = True, timeout_s: float = 20.0,
        offer_done: bool = True, offer_wait: bool = False, wait_s: float = 1.0, max_clicks: int = 60,
    ) -> None:  # fmt: skip
        if not 0 <= wait_s <= 10:
            raise ValueError(f"wait_s: expected 0..10 seconds, got {wait_s}")
        self.max_steps = check_positive_int("max_steps", max_steps)
        self.screenshots = screenshots
        self.timeout_s = timeout_s
        self.offer_done = offer_done
        self.offer_wait = offer_wait
        self.wait_s = wait_s
        self.max_clicks = check_positive_int("max_clicks", max_clicks)
        self._page = 0
        self._pages = 1
        self.browser: Browser | None = None
        self.spec: MiniwobTaskSpec | None = None
        self._elements: dict[int, ElementView] = {}
        self._fields: tuple[tuple[str, str], ...] = ()
        self._typeable: tuple[tuple[str, str], ...] = ()
        self._utterance = ""
        self._ended_by: ActionKind | None = None
        self.invalid_actions = 0

    # ------------------------------------------------------------------------------------------- protocol
    def reset(self, task: Any) -> GuiObservation:
        """Open ``task``'s page (borrowing a browser), seed it, start an episode; the first observation."""
        spec = as_spec(task)
        page = spec.task
        if self.browser is None:
            self.browser = _borrow(timeout_s=self.timeout_s, screenshots=self.screenshots)
        self.spec = spec
        self._ended_by = None
        self.invalid_actions = 0
        self._page = 0
        self._guard(lambda b: (b.open(page_url(spec.name, own_page=page.own_page, folder=page.folder)),
                               b.begin(spec.seed, spec.resolved_settings())))  # fmt: skip
        utterance, fields = self._guard(lambda b: b.utterance())
        self._utterance = utterance
        self._fields = tuple(fields) if fields is not None else _extract_fields(spec.name, utterance)
        self._typeable = self._fields + _literal_values(utterance)
        return self._observe(None)

    def step(self, action: str) -> GuiStep:
        """Apply ``action``; invalid ones (unparseable, an unknown key, an element that is gone) change nothing.

        Invalid actions are counted and named in the next observation (``invalid_action``); an action the browser
        refuses as an argument (a key or text it cannot send, a click script error) is invalid too, and the browser
        is kept. Only a browser that fails otherwise ends the episode (``RuntimeError('browser_error: ...')``).
        """
        if self.spec is None or self.browser is None:
            raise RuntimeError("step() before reset()")
        parsed = parse_action(action)
        invalid: str | None = None
        page = 0
        if parsed is None:
            invalid = f"unparseable action {action[:80]!r}"
        elif parsed.kind in (ActionKind.DONE, ActionKind.FAIL):
            self._ended_by = parsed.kind
            return GuiStep(self._final_observation(), done=True)
        elif parsed.kind is ActionKind.WAIT:
            time.sleep(self.wait_s)
        elif parsed.kind is ActionKind.MORE:
            if self._pages <= 1:
                invalid = f"{MORE_ACTION!r}: every element is already shown"
            else:
                page = self._page + 1
        elif parsed.kind is ActionKind.PRESS:
            key = parsed.key or ""
            invalid = key_error(key) or self._act(lambda b: b.press(key))
        elif parsed.ref not in self._elements:
            invalid = f"element [{parsed.ref}] is not on the page"
        elif parsed.kind is ActionKind.CLICK:
            invalid = self._act(lambda b: b.click(parsed.ref))
            invalid = invalid and f"element [{parsed.ref}]: {invalid}"
        else:
            text = parsed.text or ""
            invalid = text_error(text) or self._act(lambda b: b.type_into(parsed.ref, text))
            invalid = invalid and f"element [{parsed.ref}]: {invalid}"
        self._page = page
        if invalid is not None:
            self.invalid_actions += 1
        if self._guard(lambda b: b.status())["done"]:
            return GuiStep(self._final_observation(invalid), done=True)
        return GuiStep(self._observe(invalid), done=False)

    def verify(self) -> GuiOutcome:
        """The page checker's raw reward; ``FAIL`` or a checker that never fired is a failure with reward 0."""
        if self.browser is None:
            return GuiOutcome(0.0, False, "no episode")
        status = self._guard(lambda b: b.status())
        if not status["done"]:
            why = "agent gave up" if self._ended_by is ActionKind.FAIL else "the task's checker did not fire"
            return GuiOutcome(0.0, False, why)
        reward = float(status["raw_reward"])
        return GuiOutcome(reward, reward > 0, str(status.get("reason") or ""))

    def close(self) -> None:
        """Give the browser back to this process's idle browsers."""
        if self.browser is not None:
            _give_back(self.browser, healthy=True)
            self.browser = None

    # ------------------------------------------------------------------------------------------- helpers
    def _guard(self, call: Any) -> Any:
        """Run ``call(browser)``; a browser error quits that browser and ends the episode (``RuntimeError``)."""
        assert self.browser is not None
        try:
            return call(self.browser)
        except Exception as err:  # noqa: BLE001 - any driver failure: this browser is not reused
            raise self._drop(err) from err

    def _drop(self, err: Exception) -> RuntimeError:
        """Quit the failed browser; the error that ends the episode."""
        browser, self.browser = self.browser, None
        if browser is not None:
            _give_back(browser, healthy=False)
        return RuntimeError(f"browser_error: {type(err).__name__}: {str(err).strip()[:200]}")

    def _act(self, call: Any) -> str | None:
        """``call(browser)`` (an error text or ``None``), where a refused argument is an invalid action.

        The browser refusing its argument (a key or text it cannot send, a script error in the page's click) keeps
        the browser; any other failure drops it (:meth:`_guard`).
        """
        from selenium.common.exceptions import (
            ElementNotInteractableException,
            InvalidArgumentException,
            JavascriptException,
            MoveTargetOutOfBoundsException,
        )

        assert self.browser is not None
        try:
            return call(self.browser)  # type: ignore[no-any-return]
        except (ElementNotInteractableException, InvalidArgumentException, JavascriptException,
                MoveTargetOutOfBoundsException) as err:  # fmt: skip
            self._guard(lambda b: b.release_inputs())  # keys or buttons a refused chain left pressed
            return f"the browser refused it: {type(err).__name__}: {(err.msg or '').strip()[:120]}"
        except Exception as err:  # noqa: BLE001 - any other failure: this browser is not reused
            raise self._drop(err) from err

    def _instruction(self) -> str:
        assert self.spec is not None
        hints = " ".join(self.spec.hints)
        return f"{self._utterance}\nHints: {hints}" if hints else self._utterance

    def _observe(self, invalid: str | None) -> GuiObservation:
        elements = flatten_dom(self._guard(lambda b: b.dom()))
        self._elements = {e.ref: e for e in elements}
        shown, self._pages = element_page(elements, instruction=self._utterance, fields=self._typeable,
                                          page=self._page, per_page=self.max_clicks)  # fmt: skip
        dom_text = render_dom(shown, max_elements=self.max_clicks)
        if self._pages > 1:
            page, hidden = self._page % self._pages + 1, len(elements) - len(shown)
            dom_text += f"\n(elements page {page} of {self._pages}: {hidden} more elements; '{MORE_ACTION}' shows them)"
        candidates = candidate_actions(shown, self._typeable, max_clicks=self.max_clicks, more=self._pages > 1,
                                       wait=self.offer_wait)  # fmt: skip
        return GuiObservation(
            instruction=self._instruction(), dom_text=dom_text,
            candidates=tuple(c for c in candidates if self.offer_done or c != "DONE"),
            screenshot=self._guard(lambda b: b.screenshot()), fields=self._fields, invalid_action=invalid,
        )  # fmt: skip

    def _final_observation(self, invalid: str | None = None) -> GuiObservation:
        return GuiObservation(self._instruction(), "(episode over)", (), None, self._fields, invalid)


def _literal_values(utterance: str) -> tuple[tuple[str, str], ...]:
    """Values the instruction spells out whole: quoted text and dates (``12/06/2016``), typeable as they are."""
    quoted = re.findall(r'"([^"]{1,40})"', utterance)
    dates = re.findall(r"\b\d{1,2}/\d{1,2}/\d{4}\b", utterance)
    return tuple(("literal", v) for v in [*quoted, *dates])


_FIELDS_LIKE = {"rla-login-form": "login-user"}  # own pages whose instruction has the shape of a wheel task's


def _extract_fields(name: str, utterance: str) -> tuple[tuple[str, str], ...]:
    """The task's fields from MiniWoB++'s own extractor for ``name``; none when it has no extractor or fails."""
    from miniwob.fields import get_field_extractor

    try:
        return tuple((str(k), str(v)) for k, v in get_field_extractor(_FIELDS_LIKE.get(name, name))(utterance))
    except Exception:  # noqa: BLE001 - an utterance the extractor does not know: the policy just gets no type actions
        return ()


@dataclass(frozen=True)
class MiniwobEnvFactory:
    """Picklable ``task -> AgentEnv`` for :class:`~rlanything_core.envs.parallel.EnvPool` workers.

    Attributes:
        max_steps: step limit per episode (the paper's 50 by default).
        screenshots: keep screenshots in the observations.
        timeout_s: Selenium's script/page timeout.
        offer_done: list ``DONE`` among the candidates (see :class:`MiniwobEnv`).
        offer_wait: list ``wait`` among the candidates.
        wait_s: how long ``wait`` waits.
        max_clicks: elements per candidate page.
    """

    max_steps: int = GUI_MAX_STEPS
    screenshots: bool = True
    timeout_s: float = 20.0
    offer_done: bool = True
    offer_wait: bool = False
    wait_s: float = 1.0
    max_clicks: int = 60

    def __call__(self, task: Any) -> GuiEpisode:
        """One episode of ``task`` (a spec, a pool task's data, or a task name)."""
        env = MiniwobEnv(max_steps=self.max_steps, screenshots=self.screenshots, timeout_s=self.timeout_s,
                         offer_done=self.offer_done, offer_wait=self.offer_wait, wait_s=self.wait_s,
                         max_clicks=self.max_clicks)  # fmt: skip
        return GuiEpisode(env, as_spec(task))
