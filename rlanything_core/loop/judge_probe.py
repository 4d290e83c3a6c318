"""A fixed set of planner-labelled steps on which every judge's process accuracy is measured.

The planner oracle is exact but slow (fast-downward replans cost ~2 s a step in large kitchens; labelling four
30-step episodes per split took ~80% of a whole evaluation). Labelling fresh trajectories at every evaluation also
mixes two effects: a judge's accuracy moves when the judge changes *and* when the policy's trajectories change.

So the steps are labelled once: the first evaluation labels the first ``oracle_episodes`` episodes of each split
(played by the policy being evaluated, at the start of training the starting policy) and saves them with their
labels. Every later evaluation, of any arm or seed that is given the same file, lets its judge vote on exactly these
steps with the same vote seeds: judge accuracies are paired step by step, and the planner never runs again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torchmetrics.classification import BinaryAccuracy
from torchmetrics.functional.classification import binary_auroc

from rlanything_core.files import CorruptFileError, atomic_write_json, read_json
from rlanything_core.loop.oracle_labels import label_within_deadline
from rlanything_core.progress import heartbeat
from rlanything_core.records import AgentStep, Episode

__all__ = [
    "JudgeProbe",
    "balanced_accuracy",
    "label_probe",
    "load_probes",
    "probe_accuracy",
    "save_probes",
    "step_majority_votes",
    "step_mean_votes",
]

_FORMAT = 2  # 2: the evaluation settings the episodes were played under are recorded and checked


def balanced_accuracy(predicted: torch.Tensor, actual: torch.Tensor) -> float:
    """Mean over the classes present in ``actual`` of the fraction of them ``predicted`` gets right.

    Args:
        predicted: bool predictions.
        actual: bool labels, as many.

    Raises:
        ValueError: different shapes, or no labels.
    """
    if predicted.shape != actual.shape or actual.numel() == 0:
        raise ValueError(f"predicted, actual: expected equal non-empty shapes, got {tuple(predicted.shape)}, "
                         f"{tuple(actual.shape)}")
    predicted, actual = predicted.bool(), actual.bool()
    recalls = [float((predicted[actual == c] == c).float().mean()) for c in (False, True) if bool((actual == c).any())]
    return sum(recalls) / len(recalls)


def step_majority_votes(episode: Episode) -> list[int]:
    """Per step, the sign of the summed valid votes (``+1`` / ``-1``; a tie or no valid vote gives ``-1``)."""
    return [1 if sum(s.vote for s in step.judge) > 0 else -1 for step in episode.steps]


def step_mean_votes(episode: Episode) -> list[float]:
    """Per step, the mean of the valid votes (``0.0`` when none is valid).

    This is the judge's term of the integrated reward ``R = O + lam * mean(votes)`` (arXiv 2602.02488, Sec. 3): the
    score of a step that the policy's advantages see.
    """
    means = []
    for step in episode.steps:
        valid = [s.vote for s in step.judge if s.vote != 0]
        means.append(sum(valid) / len(valid) if valid else 0.0)
    return means


@dataclass
class JudgeProbe:
    """Planner-labelled episodes of one evaluation split.

    Attributes:
        split: the split's name (metric prefix).
        episodes: the episodes, their judge votes empty (a judge is scored on judged copies of them).
        labels: per episode, per step, ``+1`` (the planner's ``PROGRESS``) or ``-1``.
        left_out: the task ids of episodes played but not labelled in time (``label_probe``'s ``deadline_s``).
    """

    split: str
    episodes: list[Episode]
    labels: list[list[int]]
    left_out: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.episodes) != len(self.labels):
            raise ValueError(f"probe {self.split!r}: {len(self.episodes)} episodes but {len(self.labels)} label lists")
        for e, labels in zip(self.episodes, self.labels):
            if len(e.steps) != len(labels) or any(x not in (-1, 1) for x in labels):
                raise ValueError(
                    f"probe {self.split!r}, task {e.task_id!r}: expected one +1/-1 label per step "
                    f"({len(e.steps)} steps), got {labels!r}"
                )


def label_probe(
    split: str,
    episodes: Sequence[Episode],
    task_of: Callable[[str], Any],
    oracle: Callable[[Any, list[str]], list[int]],
    *,
    deadline_s: float | None = None,
    progress: bool = False,
) -> JudgeProbe:
    """Label every step of ``episodes`` with ``oracle(task_of(task_id), actions)``; copies, judge votes dropped.

    With ``deadline_s`` each episode is labelled in its own process and left out (``JudgeProbe.left_out``) when the
    planner needs longer (:func:`rlanything_core.loop.oracle_labels.label_within_deadline`): a bigger probe's cost
    stays bounded where a few kitchens take the planner tens of seconds a state. ``progress``: a line when the
    labelling starts, one a minute while it runs (a cold label store takes minutes) and one at the end.
    """
    played = [
        dataclasses.replace(e, steps=[dataclasses.replace(s, judge=[]) for s in e.steps]) for e in episodes if e.steps
    ]
    items = {i: (task_of(e.task_id), [[s.action for s in e.steps]]) for i, e in enumerate(played)}
    steps = sum(len(e.steps) for e in played)
    with heartbeat(f"{split}: the planner labels {steps} probe steps", enabled=progress):
        labelled = label_within_deadline(oracle, items, deadline_s=deadline_s)
    kept = [i for i in range(len(played)) if i in labelled]
    left_out = [played[i].task_id for i in range(len(played)) if i not in labelled]
    return JudgeProbe(split, [played[i] for i in kept], [labelled[i][0] for i in kept], left_out)


def probe_accuracy(probe: JudgeProbe) -> dict[str, float]:
    """``<split>/judge_process_acc``, ``..._bacc``, ``..._auc`` and ``oracle_progress_rate`` from ``probe``'s votes.

    Plain accuracy flatters a judge that always votes ``-1`` (most steps are not progress); the balanced accuracy is
    the mean recall of the two classes (0.5 for such a judge). Both score the majority vote, so a judge whose votes
    rank progress steps higher while leaning to one class scores 0.5 on them; the policy's advantages do not see that
    lean (the integrated reward is standardized across a task's rollouts at each step index, so a shift they share
    cancels). ``judge_process_auc`` is threshold-free: the ROC AUC of each step's mean vote (the reward's judge term)
    against the labels, ties counting half (0.5: no ranking; absent when the probe has one class only).
    """
    votes = [v for e in probe.episodes for v in step_majority_votes(e)]
    labels = [x for per_episode in probe.labels for x in per_episode]
    if not labels:
        return {}
    good_vote, good_step = torch.tensor(votes) > 0, torch.tensor(labels) > 0
    metrics = {
        f"{probe.split}/judge_process_acc": float(BinaryAccuracy()(good_vote.long(), good_step.long())),
        f"{probe.split}/judge_process_bacc": balanced_accuracy(good_vote, good_step),
        f"{probe.split}/oracle_progress_rate": sum(x > 0 for x in labels) / len(labels),
    }
    if bool(good_step.any()) and not bool(good_step.all()):
        scores = torch.tensor([m for e in probe.episodes for m in step_mean_votes(e)], dtype=torch.float64)
        metrics[f"{probe.split}/judge_process_auc"] = float(binary_auroc(scores, good_step.long()))
    return metrics


def save_probes(
    path: str | os.PathLike[str], probes: Sequence[JudgeProbe], settings: dict[str, Any] | None = None
) -> Path:
    """Write the probes atomically as JSON (the format :func:`load_probes` reads).

    Args:
        path: the file to write.
        probes: one per split.
        settings: the evaluation settings the episodes were played under (JSON values); :func:`load_probes` refuses
            the file for other settings.
    """
    payload = {
        "format": _FORMAT,
        "settings": settings,
        "probes": [
            {"split": p.split, "labels": p.labels, "episodes": [dataclasses.asdict(e) for e in p.episodes],
             "left_out": p.left_out}  # fmt: skip
            for p in probes
        ],
    }
    return atomic_write_json(path, payload)


def _episode(fields: dict[str, Any]) -> Episode:
    return Episode(**{**fields, "steps": [AgentStep(**{**s, "judge": []}) for s in fields["steps"]]})


def load_probes(path: str | os.PathLike[str], settings: dict[str, Any] | None = None) -> dict[str, JudgeProbe]:
    """The probes saved at ``path``, by split name.

    Args:
        path: a file written by :func:`save_probes`.
        settings: when given, the evaluation settings the caller would label under; they must equal the file's.

    Raises:
        CorruptFileError: the file is not a probe file of this format (the message names the file and the problem).
        ValueError: the file was labelled under other evaluation settings (the message names the differing keys):
            scoring a judge on another evaluation's steps would silently compare unlike with unlike.
    """
    data = read_json(path)
    if data.get("format") != _FORMAT or not isinstance(data.get("probes"), list):
        raise CorruptFileError(f"{path}: not a judge probe file of format {_FORMAT}")
    saved = data.get("settings")
    if settings is not None and saved != settings:
        saved = saved if isinstance(saved, dict) else {}
        keys = sorted(k for k in {*saved, *settings} if saved.get(k) != settings.get(k))
        differ = ", ".join(f"{k}: file {saved.get(k)!r} vs now {settings.get(k)!r}" for k in keys)
        raise ValueError(
            f"{path}: judge probe labelled under other evaluation settings ({differ}); delete it, or give "
            "eval.probe_file another path"
        )
    try:
        probes = [
            JudgeProbe(
                p["split"],
                [_episode(e) for e in p["episodes"]],
                [list(map(int, labels)) for labels in p["labels"]],
                [str(t) for t in p.get("left_out", [])],  # files written before the deadline have none
            )
            for p in data["probes"]
        ]
    except (KeyError, TypeError, ValueError) as err:
        raise CorruptFileError(f"{path}: malformed judge probe file ({err})") from err
    return {p.split: p for p in probes}
