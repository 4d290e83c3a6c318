"""Evaluation of the policy and the judge on held-out tasks (agent settings).

Policy: success rate and average steps (failures count as the step limit, the limit of the evaluation, unlike the
authors' code which used the training limit). Judge (when given):

- **outcome accuracy** ("foresight"): an episode's predicted outcome is the sign of its mean step vote (a tie counts
  as failure); accuracy against the real outcome.
- **process accuracy** ("local", ALFWorld only): the step's majority vote (a tie counts as ``-1``) against the
  planner oracle's label (``PROGRESS`` = a good step, ``+1``; ``NEUTRAL`` or ``REGRESS`` = ``-1``). The paper labels
  steps with a stronger model's majority vote; the planner is exact. It is used for evaluation only, never for
  training.

Both also come as **balanced accuracy** (``..._bacc``: the mean of the recalls of the classes present). Plain accuracy
flatters a judge that always says the majority label: most steps are not progress and most episodes fail, so a judge
voting ``-1`` everywhere scores well above chance in accuracy and exactly 0.5 in balanced accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torchmetrics.classification import BinaryAccuracy

from rlanything_core.collect.agent import AgentCollector
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.records import Episode
from rlanything_core.seeding import derive_seed

__all__ = ["AgentEvaluator", "EvalSplit", "balanced_accuracy", "judge_outcome_predictions", "step_majority_votes"]


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


def judge_outcome_predictions(episodes: Sequence[Episode]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(predicted, actual)`` bool tensors: the sign of each episode's mean step vote vs its outcome."""
    predicted, actual = [], []
    for e in episodes:
        votes = [s.vote for step in e.steps for s in step.judge]
        if not votes:
            continue
        predicted.append(sum(votes) / len(votes) > 0)
        actual.append(e.won)
    return torch.tensor(predicted, dtype=torch.bool), torch.tensor(actual, dtype=torch.bool)


@dataclass(frozen=True)
class EvalSplit:
    """A named set of evaluation tasks.

    Attributes:
        name: metric prefix (``"in_distribution"``, ``"out_of_distribution"``).
        tasks: what the collector's environments are built from.
        task_ids: their names.
    """

    name: str
    tasks: tuple[Any, ...]
    task_ids: tuple[str, ...]


class AgentEvaluator:
    """Roll out the policy on each split and score the judge.

    Args:
        collector: plays the evaluation episodes (its own sampling settings and step limit).
        splits: the evaluation splits.
        judge: scores the steps for outcome/process accuracy (``None``: policy metrics only).
        oracle: ``(task, actions) -> list of +1/-1 step labels`` (ALFWorld's planner), or ``None``.
        oracle_episodes: label at most this many episodes per split (the planner costs ~0.2 s a step).
        seed: evaluation seed (the same tasks and seeds at every evaluation, so curves compare like with like).
    """

    def __init__(
        self,
        collector: AgentCollector,
        splits: Sequence[EvalSplit],
        *,
        judge: JudgeCollector | None = None,
        oracle: Callable[[Any, list[str]], list[int]] | None = None,
        oracle_episodes: int = 8,
        seed: int = 1234,
    ) -> None:
        self.collector = collector
        self.splits = list(splits)
        self.judge = judge
        self.oracle = oracle
        self.oracle_episodes = oracle_episodes
        self.seed = seed

    @torch.no_grad()
    def __call__(self) -> dict[str, float]:
        """Metrics ``<split>/success_rate``, ``<split>/avg_steps``, ``<split>/judge_outcome_acc``, ... ."""
        metrics: dict[str, float] = {}
        for split in self.splits:
            episodes, _ = self.collector.collect(
                list(split.tasks), seed=derive_seed(self.seed, split.name), task_ids=list(split.task_ids)
            )
            limit = self.collector.max_steps
            metrics[f"{split.name}/success_rate"] = sum(e.won for e in episodes) / max(1, len(episodes))
            metrics[f"{split.name}/avg_steps"] = sum(len(e.steps) if e.won else limit for e in episodes) / max(
                1, len(episodes)
            )
            if self.judge is None:
                continue
            self.judge.judge(episodes, seed=derive_seed(self.seed, split.name, "judge"))
            predicted, actual = judge_outcome_predictions(episodes)
            if predicted.numel():
                metrics[f"{split.name}/judge_outcome_acc"] = float(BinaryAccuracy()(predicted.long(), actual.long()))
                metrics[f"{split.name}/judge_outcome_bacc"] = balanced_accuracy(predicted, actual)
            if self.oracle is not None:
                by_id = dict(zip(split.task_ids, split.tasks))
                votes, labels = [], []
                for e in episodes[: self.oracle_episodes]:
                    if not e.steps:
                        continue
                    labels.extend(self.oracle(by_id[e.task_id], [s.action for s in e.steps]))
                    votes.extend(step_majority_votes(e))
                if labels:
                    good_vote, good_step = torch.tensor(votes) > 0, torch.tensor(labels) > 0
                    metrics[f"{split.name}/judge_process_acc"] = float(BinaryAccuracy()(good_vote.long(),
                                                                                          good_step.long()))
                    metrics[f"{split.name}/judge_process_bacc"] = balanced_accuracy(good_vote, good_step)
                    metrics[f"{split.name}/oracle_progress_rate"] = sum(x > 0 for x in labels) / len(labels)
        return metrics
