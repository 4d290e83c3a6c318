"""Testing helpers: plain-Python reference implementations and hypothesis strategies.

:mod:`.plain` is imported here; import :mod:`.strategies` explicitly (it needs the ``dev`` extra, hypothesis).
"""

from rlanything_core.testing import plain

__all__ = ["plain"]
