"""Environment-adaptation metrics and plots over a ``TaskPool``'s event log.

arXiv 2602.02488: accepted tasks grow about linearly and their accuracy stays inside the band.

Pure functions over ``pool.events`` (dicts with ``type`` in ``candidate | accept | reject | rate``); plots return
``matplotlib`` figures and the caller saves them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "AdaptationSummary",
    "acceptance_rate",
    "accepted_per_iteration",
    "difficulty_before_after",
    "plot_accepted_growth",
    "plot_difficulty_shift",
    "rejection_reasons",
    "summarize",
]

Events = Sequence[dict[str, Any]]
AdaptationSummary = dict[str, float]


def accepted_per_iteration(events: Events, *, num_iterations: int | None = None) -> list[int]:
    """Cumulative number of accepted tasks after each iteration ``0..N-1``."""
    its = [int(e["iteration"]) for e in events if e["type"] == "accept"]
    last = max([int(e["iteration"]) for e in events] + [-1])
    n = num_iterations if num_iterations is not None else last + 1
    per = Counter(its)
    out, total = [], 0
    for i in range(n):
        total += per.get(i, 0)
        out.append(total)
    return out


def acceptance_rate(events: Events) -> float:
    """Accepted / resolved pending tasks (0 when none was resolved)."""
    done = [e for e in events if e["type"] in ("accept", "reject")]
    return sum(e["type"] == "accept" for e in done) / len(done) if done else 0.0


def rejection_reasons(events: Events) -> Counter[str]:
    """Counts of candidate outcomes: ``valid`` or the rejection reason (rewriter-side validation)."""
    return Counter("valid" if e["valid"] else str(e["reason"]) for e in events if e["type"] == "candidate")


def difficulty_before_after(events: Events) -> tuple[list[float], list[float]]:
    """Success rates of the slots' tasks at the first and at the last iteration with rates (active tasks only)."""
    rates = [e for e in events if e["type"] == "rate" and not e.get("pending")]
    if not rates:
        return [], []
    first, last = min(e["iteration"] for e in rates), max(e["iteration"] for e in rates)
    return ([e["acc"] for e in rates if e["iteration"] == first], [e["acc"] for e in rates if e["iteration"] == last])


def summarize(events: Events, *, band: tuple[float, float] = (0.2, 0.8)) -> AdaptationSummary:
    """Headline numbers: accepted count, acceptance rate, mean success rate of accepted tasks, in-band share."""
    accepted = [e["acc"] for e in events if e["type"] == "accept"]
    before, after = difficulty_before_after(events)
    low, high = band

    def in_band(xs: list[float]) -> float:
        return sum(low < x < high for x in xs) / len(xs) if xs else 0.0

    return {
        "accepted": float(len(accepted)),
        "acceptance_rate": acceptance_rate(events),
        "accepted_mean_acc": sum(accepted) / len(accepted) if accepted else 0.0,
        "in_band_before": in_band(before),
        "in_band_after": in_band(after),
    }


def plot_accepted_growth(events: Events, *, num_iterations: int | None = None) -> Figure:
    """Cumulative accepted tasks per iteration (left) and the success rate of each accepted task (right)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2))
    ax1, ax2 = fig.subplots(1, 2)
    growth = accepted_per_iteration(events, num_iterations=num_iterations)
    ax1.plot(range(len(growth)), growth, marker="o")
    ax1.set(xlabel="iteration", ylabel="accepted tasks (cumulative)", title="New tasks")
    acc = [(e["iteration"], e["acc"]) for e in events if e["type"] == "accept"]
    if acc:
        ax2.scatter(*zip(*acc), s=14)
    ax2.set(xlabel="iteration", ylabel="success rate at acceptance", ylim=(-0.05, 1.05), title="Accepted tasks")
    fig.tight_layout()
    return fig


def plot_difficulty_shift(before: Sequence[float], after: Sequence[float], *,
                          band: tuple[float, float] = (0.2, 0.8)) -> Figure:
    """Histograms of per-task success rates before and after adaptation, with the band shaded."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    bins = [i / 10 for i in range(11)]
    ax.hist([list(before), list(after)], bins=bins, label=["before", "after"])
    ax.axvspan(band[0], band[1], alpha=0.15, color="green", label="band")
    ax.set(xlabel="task success rate", ylabel="tasks", title="Task difficulty")
    ax.legend()
    fig.tight_layout()
    return fig
