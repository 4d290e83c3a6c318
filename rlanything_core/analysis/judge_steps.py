"""A judge's step scores against exact step labels: AUC and balanced accuracy with game-level bootstrap intervals.

Steps of one game are not independent draws (the same rooms, objects and policy habits), so the intervals resample
*games*, stratified by task type (each resample keeps every type's number of games: the pool is drawn in proportion
over the types, and a per-type figure must always have its type). Two judges scored on the same steps are compared
on the same resamples: the paired difference's interval is that of the difference, not of two separate intervals.

Everything is a pure function of tensors: a resample is a row of integer weights on the steps (a game drawn twice
weighs its steps twice), so the weighted metrics equal the plain metrics of the duplicated steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import torch

__all__ = [
    "JudgeInterval",
    "game_resample_weights",
    "judge_intervals",
    "weighted_auc",
    "weighted_balanced_accuracy",
]


def _check_steps(name: str, values: torch.Tensor, labels: torch.Tensor) -> None:
    if values.dim() != 1 or values.shape != labels.shape:
        raise ValueError(f"{name}, labels: expected two 1-D tensors of one length, got {tuple(values.shape)}, "
                         f"{tuple(labels.shape)}")  # fmt: skip


def _as_rows(weights: torch.Tensor, n: int) -> torch.Tensor:
    w = weights.unsqueeze(0) if weights.dim() == 1 else weights
    if w.dim() != 2 or w.shape[1] != n:
        raise ValueError(f"weights: expected (N,) or (R, N) with N = {n}, got {tuple(weights.shape)}")
    if bool((w < 0).any()):
        raise ValueError("weights: expected non-negative weights")
    return w.double()


def weighted_auc(scores: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """ROC AUC of ``scores`` for the ``True`` labels, under each row of step weights; ties count half.

    The Mann-Whitney form: the weighted fraction of (positive, negative) pairs the scores order correctly.

    Args:
        scores: ``(N,)`` a judge's score per step (e.g. ``P(+1)``).
        labels: ``(N,)`` bool, ``True`` where the step is progress.
        weights: ``(N,)`` or ``(R, N)`` non-negative step weights (a bootstrap resample per row).

    Returns:
        ``(R,)`` (``()`` for ``(N,)`` weights) float64 AUCs; NaN where a row weighs no positive or no negative step.
    """
    _check_steps("scores", scores, labels)
    w = _as_rows(weights, scores.numel())
    y = labels.bool()
    values, inverse = torch.unique(scores.double(), return_inverse=True)  # sorted unique scores; step -> its value
    neg = torch.zeros(w.shape[0], values.numel(), dtype=torch.float64)
    neg.index_add_(1, inverse[~y], w[:, ~y])  # negative weight at each distinct score
    below = torch.cumsum(neg, dim=1) - neg  # negative weight strictly below each score
    credit = below[:, inverse[y]] + 0.5 * neg[:, inverse[y]]  # per positive step: pairs it orders right, ties half
    pos_w = w[:, y]
    total = pos_w.sum(1) * neg.sum(1)
    auc = torch.where(total > 0, (pos_w * credit).sum(1) / total.clamp_min(1e-300), torch.nan)
    return auc.squeeze(0) if weights.dim() == 1 else auc


def weighted_balanced_accuracy(predicted: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Mean of the two classes' recalls under each row of step weights.

    Args:
        predicted: ``(N,)`` bool predictions (e.g. ``P(+1) > 1/2``, the majority of many votes).
        labels: ``(N,)`` bool labels.
        weights: ``(N,)`` or ``(R, N)`` non-negative step weights.

    Returns:
        ``(R,)`` (or ``()``) float64; NaN where a row weighs no step of one class (a recall of an absent class is
        undefined, and a figure over one class would not be comparable with the others).
    """
    _check_steps("predicted", predicted, labels)
    w = _as_rows(weights, predicted.numel())
    y, p = labels.bool(), predicted.bool()
    pos, neg = w[:, y].sum(1), w[:, ~y].sum(1)
    tpr = w[:, y & p].sum(1) / pos.clamp_min(1e-300)
    tnr = w[:, ~y & ~p].sum(1) / neg.clamp_min(1e-300)
    bacc = torch.where((pos > 0) & (neg > 0), 0.5 * (tpr + tnr), torch.nan)
    return bacc.squeeze(0) if weights.dim() == 1 else bacc


def game_resample_weights(
    games: Sequence[str], strata: Sequence[str], *, samples: int, generator: torch.Generator
) -> torch.Tensor:
    """``(samples, N)`` step weights of a bootstrap over games, stratified by ``strata``.

    Each resample draws, with replacement, as many games of each stratum as it has; a step weighs how often its game
    was drawn.

    Args:
        games: ``N`` game ids, one per step.
        strata: ``N`` stratum names (the task type), one per step; constant within a game.
        samples: resamples ``R`` (>= 1).
        generator: the randomness (the same seed gives the same resamples).
    """
    if len(games) != len(strata):
        raise ValueError(f"games, strata: expected one of each per step, got {len(games)} and {len(strata)}")
    if samples < 1:
        raise ValueError(f"samples: expected >= 1, got {samples}")
    ids = sorted(set(games))
    index = {g: i for i, g in enumerate(ids)}
    stratum_of: dict[str, str] = {}
    for g, s in zip(games, strata):
        if stratum_of.setdefault(g, s) != s:
            raise ValueError(f"strata: game {g!r} is in two strata ({stratum_of[g]!r}, {s!r}); expected one per game")
    counts = torch.zeros(samples, len(ids), dtype=torch.float64)
    for s in sorted(set(stratum_of.values())):
        members = torch.tensor([index[g] for g in ids if stratum_of[g] == s])
        drawn = members[torch.randint(len(members), (samples, len(members)), generator=generator)]
        counts.scatter_add_(1, drawn, torch.ones(drawn.shape, dtype=torch.float64))
    step_game = torch.tensor([index[g] for g in games], dtype=torch.long)
    return counts[:, step_game]


@dataclasses.dataclass(frozen=True)
class JudgeInterval:
    """One figure of one judge (or a paired difference ``judge - baseline``) on one group of steps.

    Attributes:
        group: the steps' group (a task type, ``all``, ...).
        judge: the judge's name, or ``"<judge> - <baseline>"`` for a paired difference.
        metric: ``auc`` or ``bacc``.
        value: the figure on the steps as they are.
        lo, hi: the percentile interval over the resamples (NaN resamples left out).
        steps, positives, games: the group's size.
    """

    group: str
    judge: str
    metric: str
    value: float
    lo: float
    hi: float
    steps: int
    positives: int
    games: int


def _interval(draws: torch.Tensor, level: float) -> tuple[float, float]:
    ok = draws[~torch.isnan(draws)]
    if ok.numel() == 0:
        return math.nan, math.nan
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(ok, q).tolist()
    return float(lo), float(hi)


def judge_intervals(
    scores: Mapping[str, torch.Tensor],
    labels: torch.Tensor,
    games: Sequence[str],
    groups: Mapping[str, torch.Tensor],
    *,
    weights: torch.Tensor,
    baseline: str,
    threshold: float = 0.5,
    level: float = 0.95,
) -> list[JudgeInterval]:
    """AUC and balanced accuracy of every judge on every group of steps, and each judge's paired difference.

    The differences are ``judge - baseline`` on the same resamples ``weights`` (:func:`game_resample_weights`).

    Args:
        scores: judge name -> ``(N,)`` its ``P(+1)`` per step (all judges on the same ``N`` steps).
        labels: ``(N,)`` bool exact labels.
        games: ``N`` game ids (the group's game count).
        groups: group name -> ``(N,)`` bool, its steps.
        weights: ``(R, N)`` the resamples, shared by every judge (paired).
        baseline: the judge the differences are taken from (a key of ``scores``).
        threshold: the balanced accuracy scores ``P(+1) > threshold``.
        level: the interval's coverage.
    """
    if baseline not in scores:
        raise ValueError(f"baseline: expected one of {sorted(scores)}, got {baseline!r}")
    if not 0 < level < 1:
        raise ValueError(f"level: expected in (0, 1), got {level}")
    n = labels.numel()
    if len(games) != n or weights.dim() != 2 or weights.shape[1] != n:
        raise ValueError(f"games, weights: expected {n} games and (R, {n}) weights, got {len(games)}, "
                         f"{tuple(weights.shape)}")  # fmt: skip
    y = labels.bool()
    out: list[JudgeInterval] = []
    for group, mask in groups.items():
        m = mask.bool()
        size = {"steps": int(m.sum()), "positives": int((y & m).sum()),
                "games": len({g for g, keep in zip(games, m.tolist()) if keep})}  # fmt: skip
        w = weights.double() * m.double()  # steps outside the group weigh nothing
        point = m.double()
        figures: dict[str, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        for judge, p in scores.items():
            figures[judge] = {
                "auc": (weighted_auc(p, y, point), weighted_auc(p, y, w)),
                "bacc": (weighted_balanced_accuracy(p > threshold, y, point),
                         weighted_balanced_accuracy(p > threshold, y, w)),  # fmt: skip
            }
        for judge in scores:
            for metric, (value, draws) in figures[judge].items():
                out.append(JudgeInterval(group, judge, metric, float(value), *_interval(draws, level), **size))
        for judge in scores:
            if judge == baseline:
                continue
            for metric, (value, draws) in figures[judge].items():
                base_value, base_draws = figures[baseline][metric]
                out.append(JudgeInterval(group, f"{judge} - {baseline}", metric, float(value - base_value),
                                         *_interval(draws - base_draws, level), **size))  # fmt: skip
    return out
