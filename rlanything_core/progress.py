"""Progress of a long phase: a bar with counts and an ETA in the console, and a line every few percent in the log.

The phases that take minutes to hours (the warm start, an evaluation, the training iterations, an ablation's runs)
each wrap their loop in a :class:`Progress`. On a terminal it shows a tqdm bar; whatever the terminal, it writes a
line ``[HH:MM:SS] <what>: <done>/<total> <unit> (<percent>%), <elapsed> elapsed, ETA <eta>`` each time another
``log_every`` percent is done, or ``log_interval_s`` (a minute) after the last line, whichever comes first, so a
slow phase still says every minute how far it is (and at the end); a quick phase is not spelled out unit by unit (no
two percent lines within ``min_interval_s``). A single call that runs for minutes without units to count (resetting a
batch of engines) is wrapped in :func:`heartbeat`: a line when it starts, one a minute while it runs, and one when it
ends. The lines go to standard output (an ablation's
worker logs, which its parent echoes) and to the ``rlanything.progress`` logger, which :func:`log_to_file` points
at a run's ``logs/progress.log``. The ETA: the elapsed time per unit so far times the units left (:func:`eta_seconds`).
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from tqdm.auto import tqdm

__all__ = ["LOGGER", "Progress", "eta_seconds", "format_duration", "heartbeat", "log_to_file", "progress_line"]

LOGGER = logging.getLogger("rlanything.progress")
LOGGER.propagate = False  # its lines are printed already; the logger only feeds the run's own log file
LOGGER.setLevel(logging.INFO)


def eta_seconds(done: float, total: float, elapsed: float) -> float | None:
    """Seconds left at the pace so far (``None`` before the first unit); 0 when done.

    Raises:
        ValueError: a negative argument, or ``done > total``.
    """
    if done < 0 or total < 0 or elapsed < 0:
        raise ValueError(f"done, total, elapsed: expected >= 0, got {done}, {total}, {elapsed}")
    if done > total:
        raise ValueError(f"done: expected <= total ({total}), got {done}")
    if done >= total:
        return 0.0
    if done == 0:
        return None
    return elapsed / done * (total - done)


def format_duration(seconds: float | None) -> str:
    """``"?"``, ``"42 s"``, ``"7.5 min"`` or ``"2.1 h"``."""
    if seconds is None or math.isnan(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def progress_line(what: str, done: int, total: int, elapsed: float, unit: str, initial: int = 0) -> str:
    """One log line: counts, percent, elapsed and ETA (without the time stamp).

    ``initial`` units were done before ``elapsed`` started (a resumed run): they do not count in the pace.
    """
    percent = 100.0 * done / total if total else 100.0
    eta = eta_seconds(done - initial, total - initial, elapsed)
    return (
        f"{what}: {done}/{total} {unit} ({percent:.0f}%), {format_duration(elapsed)} elapsed, "
        f"ETA {format_duration(eta)}"
    )


def _say(text: str, bar: Any = None, stream: Any = None) -> None:
    """``[HH:MM:SS] text`` on ``stream`` (default: standard output as it is now), and to the run's log.

    Through ``bar`` when there is one, so that a tqdm bar on the terminal is not torn.
    """
    line = f"[{time.strftime('%H:%M:%S')}] {text}"
    if bar is None:
        print(line, file=sys.stdout if stream is None else stream, flush=True)
    else:
        bar.write(line, file=sys.stdout)
        sys.stdout.flush()
    LOGGER.info(text)


def log_to_file(path: Path) -> logging.Handler:
    """Append the progress lines to ``path`` (its folder made); returns the handler (``LOGGER.removeHandler`` it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(message)s", "%Y-%m-%d %H:%M:%S"))
    LOGGER.addHandler(handler)
    return handler


class Progress:
    """A bar (on a terminal) and a line every ``log_every`` percent for ``total`` units of one phase.

    Args:
        total: the units of the phase (>= 0).
        what: the phase's name in the bar and the lines.
        unit: the units' name.
        initial: units already done (a resumed run): counted as done, not in the pace.
        log_every: percent of ``total`` between two lines (in (0, 100]).
        log_interval_s: at most this long between two lines while units are done (> 0): a phase of hours still
            reports every minute.
        min_interval_s: at least this long between two percent lines (>= 0; the first and the closing line always
            come): a phase of seconds prints two lines, not one per unit.
        enabled: ``False``: no bar and no line (other ranks of a distributed run).
        bar: show the tqdm bar (only on a terminal in any case).
    """

    def __init__(self, total: int, what: str, *, unit: str = "it", initial: int = 0, log_every: float = 5.0,
                 log_interval_s: float = 60.0, min_interval_s: float = 10.0, enabled: bool = True,
                 bar: bool = True) -> None:  # fmt: skip
        if total < 0:
            raise ValueError(f"total: expected >= 0, got {total}")
        if not 0 <= initial <= total:
            raise ValueError(f"initial: expected 0 <= initial <= total ({total}), got {initial}")
        if not 0 < log_every <= 100:
            raise ValueError(f"log_every: expected a percent in (0, 100], got {log_every}")
        if not log_interval_s > 0:
            raise ValueError(f"log_interval_s: expected > 0, got {log_interval_s}")
        if not min_interval_s >= 0:
            raise ValueError(f"min_interval_s: expected >= 0, got {min_interval_s}")
        self.log_interval_s = log_interval_s
        self.min_interval_s = min_interval_s
        self.total, self.what, self.unit, self.log_every, self.enabled = total, what, unit, log_every, enabled
        self.initial = self.done = initial
        self.start = self._last_line = time.monotonic()
        self._next_log = self._threshold(initial) + 1
        show = enabled and bar and sys.stderr.isatty()
        self.bar = tqdm(total=total, initial=initial, desc=what, unit=unit, disable=not show, leave=False,
                        dynamic_ncols=True)  # fmt: skip
        if enabled:
            self._emit()  # the phase's first line: what it is and how much there is

    def _threshold(self, done: int) -> int:
        """How many ``log_every`` steps of ``total`` ``done`` has passed."""
        return int(100.0 * done / self.total // self.log_every) if self.total else 0

    def _emit(self) -> None:
        self._last_line = time.monotonic()
        elapsed = self._last_line - self.start
        _say(progress_line(self.what, self.done, self.total, elapsed, self.unit, self.initial), self.bar)

    def update(self, n: int = 1) -> None:
        """``n`` more units done; a line at another ``log_every`` percent, at the end, or a minute after the last.

        (The minute is ``log_interval_s``.)
        """
        self.done = min(self.total, self.done + n)
        self.bar.update(n)
        since = time.monotonic() - self._last_line
        due = self.done == self.total or (self._threshold(self.done) >= self._next_log and since >= self.min_interval_s)
        if self.enabled and self._next_log < 10**9 and not due:
            due = since >= self.log_interval_s
        if self.enabled and due:
            self._next_log = self._threshold(self.done) + 1
            self._emit()
            if self.done == self.total:
                self._next_log = 10**9  # the closing line once

    def postfix(self, **values: str) -> None:
        """Show ``values`` beside the bar (e.g. the running loss)."""
        self.bar.set_postfix(values)

    def close(self) -> None:
        """Close the bar; a phase that ended early (every episode over before the step limit) says so in a line."""
        if self.enabled and self.done < self.total and self._next_log < 10**9:
            elapsed = time.monotonic() - self.start
            _say(f"{self.what}: done at {self.done}/{self.total} {self.unit}, {format_duration(elapsed)}", self.bar)
            self._next_log = 10**9
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@contextmanager
def heartbeat(what: str, *, interval_s: float = 60.0, enabled: bool = True) -> Iterator[None]:
    """Lines around one long call with nothing to count: when it starts, every ``interval_s`` while it runs, at the end.

    ``with heartbeat("evaluation (140 episodes): resetting the engines"):`` prints ``<what>: started``, then
    ``<what>: still running, 1.0 min elapsed`` each minute from a daemon thread, then ``<what>: done in 2.9 min``
    (also when the call raises: ``stopped after``). ``enabled=False``: nothing.

    Raises:
        ValueError: ``interval_s`` <= 0.
    """
    if not interval_s > 0:
        raise ValueError(f"interval_s: expected > 0, got {interval_s}")
    if not enabled:
        yield
        return
    start = time.monotonic()
    # Bound now: the call may swap ``sys.stdout`` for a while (fast_downward's PDDL translation, most of an ALFWorld
    # reset, captures its prints in a StringIO), and a beat written then would vanish into it.
    stream = sys.stdout

    def line(text: str) -> None:
        _say(f"{what}: {text}", stream=stream)

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval_s):
            line(f"still running, {format_duration(time.monotonic() - start)} elapsed")

    line("started")
    thread = threading.Thread(target=beat, name="rlanything-heartbeat", daemon=True)
    thread.start()
    ended = "stopped after"
    try:
        yield
        ended = "done in"
    finally:
        stop.set()
        thread.join()
        line(f"{ended} {format_duration(time.monotonic() - start)}")
