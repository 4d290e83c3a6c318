"""Every page the ``miniwob`` wheel ships, each in a skill family: what makes all of MiniWoB++ nameable.

The wheel (PyPI ``miniwob==1.1.0``) ships 130 task pages under ``miniwob/html/miniwob/``, but registers only 125 of
them as gymnasium environments (``button-delay``, ``chase-circle``, ``hover-shape``, ``moving-items`` and
``simon-says`` have pages and no registration). This library opens pages by file, so the source of truth is the
folder listing (:func:`shipped_pages`), not the gymnasium registry. The FlightWoB tasks (``flight.AA``,
``flight.Alaska``, ``flight.Alaska-auto``) are not pages of that folder: they need an HTTP server and a larger window
and are not offered.

Families group pages by the skill they exercise (the curated pages of ``tasks.py`` keep their families, and each
family here contains them). The ``pointer`` family holds the pages whose checker needs what the DOM action set
(click an element, type, press a key, wait) cannot do: drag, draw, hover, coordinates on a canvas or an SVG, or a
text selection. They can be named and opened, and a policy with coordinate actions could play them; a DOM-level
policy cannot win them, so no default list selects them.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

__all__ = ["POINTER_FAMILY", "SHIPPED_FAMILIES", "family_of", "shipped_pages", "wheel_html_dir"]

POINTER_FAMILY = "pointer"

SHIPPED_FAMILIES: dict[str, tuple[str, ...]] = {
    "click": ("click-button", "click-link", "click-dialog", "click-test", "click-button-sequence", "click-dialog-2",
              "click-test-2", "click-test-transfer", "click-widget", "button-delay", "unicode-test"),
    "visual": ("click-color", "click-shades", "click-shape", "click-pie", "click-pie-nodelay", "count-shape",
               "count-sides", "identify-shape", "visual-addition", "grid-coordinate", "find-greatest"),
    "text-entry": ("focus-text", "enter-text", "enter-password", "focus-text-2", "enter-text-2",
                   "enter-text-dynamic", "text-transform", "copy-paste", "copy-paste-2"),
    "login": ("login-user", "login-user-popup"),
    "forms": ("enter-date", "enter-time", "form-sequence", "form-sequence-2", "form-sequence-3", "multi-layouts",
              "multi-orderings", "sign-agreement", "choose-list", "use-spinner"),
    "checkboxes": ("click-checkboxes", "click-option", "click-checkboxes-large", "click-checkboxes-soft",
                   "click-checkboxes-transfer", "number-checkboxes"),
    "tabs": ("click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard", "click-tab", "click-tab-2"),
    "navigation": ("click-collapsible", "click-collapsible-nodelay", "click-collapsible-2",
                   "click-collapsible-2-nodelay", "click-menu", "click-menu-2", "navigate-tree", "click-scroll-list",
                   "scroll-text", "scroll-text-2"),
    "dates": ("choose-date-easy", "choose-date-medium", "choose-date", "choose-date-nodelay", "daily-calendar"),
    "email": ("email-inbox", "email-inbox-delete", "email-inbox-forward-nl", "email-inbox-forward",
              "email-inbox-forward-nl-turk", "email-inbox-important", "email-inbox-nl-turk", "email-inbox-noscroll",
              "email-inbox-reply", "email-inbox-star-reply"),
    "social": ("social-media", "social-media-all", "social-media-some"),
    "search": ("search-engine", "phone-book", "read-table", "read-table-2", "find-word", "stock-market"),
    "booking": ("book-flight", "book-flight-nodelay", "buy-ticket", "order-food"),
    "autocomplete": ("use-autocomplete", "use-autocomplete-nodelay"),
    "reasoning": ("simple-arithmetic", "simple-algebra", "ascending-numbers", "guess-number", "hot-cold",
                  "odd-or-even", "generate-number", "tic-tac-toe", "terminal"),
    POINTER_FAMILY: ("drag-box", "drag-circle", "drag-cube", "drag-items", "drag-items-grid", "drag-shapes",
                     "drag-shapes-2", "drag-single-shape", "drag-sort-numbers", "draw-circle", "draw-line",
                     "bisect-angle", "circle-center", "right-angle", "find-midpoint", "chase-circle", "moving-items",
                     "use-colorwheel", "use-colorwheel-2", "use-slider", "use-slider-2", "highlight-text",
                     "highlight-text-2", "resize-textarea", "hover-shape", "simon-says", "text-editor"),
}  # fmt: skip
"""Family -> the wheel's pages in it (each page in exactly one family; a page missing here is in ``other``)."""

_FAMILY_OF = {page: family for family, pages in SHIPPED_FAMILIES.items() for page in pages}


def family_of(page: str) -> str:
    """The family of a shipped page (``other`` for a page a newer wheel added and this table does not know)."""
    return _FAMILY_OF.get(page, "other")


def wheel_html_dir() -> Path:
    """The wheel's ``html`` folder (``core/``, ``common/``, ``miniwob/``, ``flight/``), found without importing it.

    Raises:
        ModuleNotFoundError: the ``miniwob`` wheel is not installed (``pip install -e '.[gui]'``).
    """
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the PyPI package miniwob==1.1.0 is not installed (pip install -e '.[gui]')")
    return Path(next(iter(spec.submodule_search_locations))) / "html"


@functools.cache
def shipped_pages() -> tuple[str, ...]:
    """The names of every task page the installed wheel ships (``html/miniwob/*.html``), sorted."""
    return tuple(sorted(p.stem for p in (wheel_html_dir() / "miniwob").glob("*.html")))
