"""A warning when the judge loses its output format: more than half of its unit tests (or votes) fail to parse.

An LLM judge trained at too high a learning rate (an encoder's 3e-4 instead of an LLM's ~1e-5) can unlearn the test
format within one update; every unparseable test then earns the format penalty and the unit-test rewards say nothing.
The rates are already among an iteration's and an evaluation's metrics; :func:`format_warning` turns one past
:data:`FORMAT_WARNING_RATE` into a message naming what to change, and :func:`warn_format_failures` emits it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping

__all__ = ["FORMAT_WARNING_RATE", "JudgeFormatWarning", "format_warning", "warn_format_failures"]

FORMAT_WARNING_RATE = 0.5
"""The share of unparseable judge outputs above which a run warns."""

_LOG = logging.getLogger(__name__)


class JudgeFormatWarning(RuntimeWarning):
    """More than :data:`FORMAT_WARNING_RATE` of the judge's outputs did not parse."""


def format_warning(rate: float, *, where: str, threshold: float = FORMAT_WARNING_RATE) -> str | None:
    """The warning for a format failure ``rate`` measured at ``where``, or ``None`` at or below ``threshold``.

    Raises:
        ValueError: ``rate`` or ``threshold`` outside [0, 1].
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate: expected a share in [0, 1], got {rate}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold: expected a share in [0, 1], got {threshold}")
    if rate <= threshold:
        return None
    return (
        f"{where}: {rate:.0%} of the judge's unit tests did not parse (over {threshold:.0%}): the judge is losing its "
        "output format, and the unit-test rewards carry little signal. For an LLM judge lower optim.judge_lr (about "
        "1e-5; the encoder's 3e-4 is too high) and keep setting.test_scaffold=true"
    )


def warn_format_failures(metrics: Mapping[str, float], *, where: str) -> list[str]:
    """Warn for each ``*test_format_failure_rate`` of ``metrics`` over :data:`FORMAT_WARNING_RATE`.

    Each is a :class:`JudgeFormatWarning` and a log line; returns the messages.
    """
    out = []
    for key, value in metrics.items():
        if key.endswith("test_format_failure_rate"):
            message = format_warning(float(value), where=f"{where} ({key})")
            if message is not None:
                warnings.warn(message, JudgeFormatWarning, stacklevel=2)
                _LOG.warning(message)
                out.append(message)
    return out
