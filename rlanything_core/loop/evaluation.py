"""Evaluation of the policy and the judge on held-out tasks (agent settings).

Policy: success rate and average steps (failures count as the step limit, the limit of the evaluation, unlike the
authors' code which used the training limit). Judge (when given):

- **outcome accuracy** ("foresight"): an episode's predicted outcome is the sign of its mean step vote (a tie counts
  as failure); accuracy against the real outcome.
- **process accuracy** ("local", ALFWorld only): the step's majority vote (a tie counts as ``-1``) against the
  planner oracle's label (``PROGRESS`` = a good step, ``+1``; ``NEUTRAL`` or ``REGRESS`` = ``-1``). The paper labels
  steps with a stronger model's majority vote; the planner is exact. It is used for evaluation only, never for
  training. The labelled steps are a fixed probe set (:mod:`rlanything_core.loop.judge_probe`): the first
  evaluation plays ``oracle_episodes`` episodes per split (its first games, with ``seed``), labels them and, given
  ``probe_file``, saves them; every later evaluation (of any run given the file) scores its judge on those same
  steps, so the planner runs once.

Pairing: the evaluator plays the same tasks with the same episode seeds (``episode_seed``) at every call, so two
models evaluated by evaluators built alike are compared game by game. Each call keeps one :class:`EpisodeOutcome` per
episode in ``last_outcomes``: the paired statistics of ``rlanything_core/analysis/stats.py`` resample them.

Both also come as **balanced accuracy** (``..._bacc``: the mean of the recalls of the classes present). Plain accuracy
flatters a judge that always says the majority label: most steps are not progress and most episodes fail, so a judge
voting ``-1`` everywhere scores well above chance in accuracy and exactly 0.5 in balanced accuracy.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torchmetrics.classification import BinaryAccuracy

from rlanything_core.collect.agent import AgentCollector
from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.loop.judge_probe import (
    JudgeProbe,
    balanced_accuracy,
    label_probe,
    load_probes,
    probe_accuracy,
    save_probes,
    step_majority_votes,
)
from rlanything_core.loop.protocol import SINGLE_PROCESS, Collectives
from rlanything_core.loop.sharded_evaluation import sharded_collect, sharded_judge
from rlanything_core.records import Episode
from rlanything_core.seeding import derive_seed

__all__ = [
    "AgentEvaluator",
    "EpisodeOutcome",
    "EvalSplit",
    "balanced_accuracy",
    "judge_outcome_predictions",
    "step_majority_votes",
]


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


@dataclass(frozen=True)
class EpisodeOutcome:
    """One evaluation episode's result, the unit of the paired statistics.

    Attributes:
        split: the split's name (metric prefix).
        task_id: the task it played.
        run: which of the task's evaluation rollouts (``0 .. runs - 1``; its episode seeds depend on it).
        won: whether the task was solved.
        steps: steps taken.
    """

    split: str
    task_id: str
    run: int
    won: bool
    steps: int


class AgentEvaluator:
    """Roll out the policy on each split and score the judge (a ``loop.protocol.JudgeAccuracyEvaluator``).

    Args:
        collector: plays the evaluation episodes (its own sampling settings and step limit).
        splits: the evaluation splits.
        judge: scores the steps for outcome/process accuracy (``None``: policy metrics only).
        oracle: ``(task, actions) -> list of +1/-1 step labels`` (ALFWorld's planner), or ``None``.
        oracle_episodes: label at most this many episodes per split (the planner costs ~0.2 s a step).
        seed: evaluation seed (the same tasks and seeds at every evaluation, so curves compare like with like); it
            also seeds the judge's probe set (its episodes and votes), which every run given ``probe_file`` shares.
        episode_seed: the seed of the evaluation episodes (default: ``seed``). The ablation gives each training seed
            its own, the same for all of that seed's arms: paired within a seed, independent draws across seeds (one
            shared draw would make every seed's "before" row the same sample and the seeds' intervals too narrow).
        judge_episodes: the judge votes on the first this many episodes of each split only (``None``: all); its
            outcome accuracy is over them, and the probe set is labelled from the first ``oracle_episodes`` of them.
            A judge's vote costs about a policy step, so this keeps a large policy evaluation affordable.
        probe_file: where the probe set of planner-labelled episodes is read from (when it exists) or saved to (after
            the first evaluation labels it); ``None``: kept in memory only.
        oracle_deadline_s: planner seconds one probe episode may take (``None``: no limit); episodes past it are left
            out of the probe and named in it (``judge_probe.label_probe``). Recorded in the probe file's settings.

    Raises:
        ValueError: ``oracle_episodes < 0``, ``judge_episodes < 1`` or ``oracle_deadline_s <= 0``.
    """

    sharded: bool = False  # sharded_evaluator's copy says True: every rank calls it (see loop.sharded_evaluation)
    collectives: Collectives = SINGLE_PROCESS  # what a sharded evaluation splits and gathers over (the loop's runtime)

    def __init__(
        self,
        collector: AgentCollector,
        splits: Sequence[EvalSplit],
        *,
        judge: JudgeCollector | None = None,
        oracle: Callable[[Any, list[str]], list[int]] | None = None,
        oracle_episodes: int = 8,
        seed: int = 1234,
        judge_episodes: int | None = None,
        probe_file: str | os.PathLike[str] | None = None,
        episode_seed: int | None = None,
        oracle_deadline_s: float | None = None,
    ) -> None:
        if oracle_episodes < 0:
            raise ValueError(f"oracle_episodes: expected >= 0, got {oracle_episodes}")
        if oracle_deadline_s is not None and not oracle_deadline_s > 0:
            raise ValueError(f"oracle_deadline_s: expected > 0 seconds or None, got {oracle_deadline_s!r}")
        self.oracle_deadline_s = oracle_deadline_s
        if judge_episodes is not None and judge_episodes < 1:
            raise ValueError(f"judge_episodes: expected >= 1 or None, got {judge_episodes}")
        self.judge_episodes = judge_episodes
        self.collector = collector
        self.splits = list(splits)
        self.judge = judge
        self.oracle = oracle
        self.oracle_episodes = oracle_episodes
        self.seed = seed
        self.episode_seed = seed if episode_seed is None else episode_seed
        self.last_outcomes: list[EpisodeOutcome] = []
        self.probe_file = None if probe_file is None else Path(probe_file)
        self.probes: dict[str, JudgeProbe] = {}
        if self.probe_file is not None and self.probe_file.is_file():
            self.probes = load_probes(self.probe_file, self._probe_settings())

    def _collect(self, tasks: list[Any], *, seed: int, task_ids: list[str]) -> list[Episode]:
        """The collector's episodes of ``tasks``, split over the ranks when sharded (every rank gets them all)."""
        if self.sharded:
            return sharded_collect(self.collector, tasks, seed=seed, task_ids=task_ids, collectives=self.collectives)[0]
        return self.collector.collect(tasks, seed=seed, task_ids=task_ids)[0]

    def _judge(self, judge: JudgeCollector, episodes: Sequence[Episode], *, seed: int) -> list[Episode]:
        """Judged copies of ``episodes``, the votes split over the ranks when sharded (every rank gets them all)."""
        if self.sharded:
            return sharded_judge(judge, episodes, seed=seed, collectives=self.collectives)[0]
        return judge.judge(episodes, seed=seed)[0]

    def _probe_games(self, split: EvalSplit) -> int:
        """How many of the split's first games the probe plays: enough for ``oracle_episodes`` episodes."""
        return min(len(split.tasks), math.ceil(self.oracle_episodes / max(1, int(self.collector.group_size))))

    def _probe_settings(self) -> dict[str, Any]:
        """What decides the probe's episodes: recorded in the probe file, which is refused under other settings."""
        return {
            "seed": self.seed,
            "oracle_episodes": self.oracle_episodes,
            "group_size": int(self.collector.group_size),
            "max_steps": int(self.collector.max_steps),
            "max_history_turns": self.collector.max_history_turns,
            "games": {s.name: list(s.task_ids[: self._probe_games(s)]) for s in self.splits},
            # only when set: probe files labelled without a deadline keep matching the settings they were made under
            **({"oracle_deadline_s": self.oracle_deadline_s} if self.oracle_deadline_s is not None else {}),
        }

    def _probe(self, split: EvalSplit) -> JudgeProbe | None:
        """The split's probe set: loaded, or played (the first games, ``seed``) and labelled now by the planner."""
        if split.name in self.probes:
            return self.probes[split.name]
        games = self._probe_games(split)
        if self.oracle is None or games == 0:
            return None
        episodes = self._collect(
            list(split.tasks[:games]), seed=derive_seed(self.seed, split.name), task_ids=list(split.task_ids[:games])
        )
        by_id = dict(zip(split.task_ids, split.tasks))
        shown = isinstance(self.collector.progress, str)  # the evaluation's own lines are on
        probe = label_probe(split.name, episodes[: self.oracle_episodes], by_id.__getitem__, self.oracle,
                            deadline_s=self.oracle_deadline_s, progress=shown)  # fmt: skip
        self.probes[split.name] = probe
        if self.probe_file is not None and all(s.name in self.probes for s in self.splits):
            save_probes(self.probe_file, [self.probes[s.name] for s in self.splits], self._probe_settings())
        return probe

    def _process_accuracy(self, probe: JudgeProbe | None) -> dict[str, float]:
        """The judge's votes on the probe's steps against the planner's labels (the same vote seeds every call)."""
        if probe is None or self.judge is None:
            return {}
        judged = self._judge(self.judge, probe.episodes, seed=derive_seed(self.seed, probe.split, "probe"))
        return probe_accuracy(replace(probe, episodes=judged))  # the probe itself keeps its episodes unjudged

    @torch.no_grad()
    def judge_accuracy(self) -> dict[str, float]:
        """Only the judge's process accuracy, on the probe set: no policy rollouts, no planner once it is labelled.

        The numbers equal the full evaluation's process accuracy at this point (the same steps, the same vote seeds).
        Splits without a probe yet are played first (the first games, enough for ``oracle_episodes`` episodes) and
        labelled. Empty without a judge or an oracle.
        """
        if self.judge is None or (self.oracle is None and not self.probes):
            return {}
        metrics: dict[str, float] = {}
        for split in self.splits:
            metrics.update(self._process_accuracy(self._probe(split)))
        return metrics

    @torch.no_grad()
    def __call__(self) -> dict[str, float]:
        """Metrics ``<split>/success_rate``, ``<split>/avg_steps``, ``<split>/judge_outcome_acc``, ... ."""
        metrics: dict[str, float] = {}
        outcomes: list[EpisodeOutcome] = []
        runs = self.collector.group_size
        for split in self.splits:
            episodes = self._collect(
                list(split.tasks), seed=derive_seed(self.episode_seed, split.name), task_ids=list(split.task_ids)
            )
            # the collector returns each task's runs together, in task order
            outcomes.extend(
                EpisodeOutcome(split.name, e.task_id, i % runs, bool(e.won), len(e.steps))
                for i, e in enumerate(episodes)
            )
            limit = self.collector.max_steps
            metrics[f"{split.name}/success_rate"] = sum(e.won for e in episodes) / max(1, len(episodes))
            metrics[f"{split.name}/avg_steps"] = sum(len(e.steps) if e.won else limit for e in episodes) / max(
                1, len(episodes)
            )
            if self.judge is None:
                continue
            # a prefix: the same episodes and vote seeds at every call
            judged = self._judge(
                self.judge, episodes[: self.judge_episodes], seed=derive_seed(self.episode_seed, split.name, "judge")
            )
            predicted, actual = judge_outcome_predictions(judged)
            if predicted.numel():
                metrics[f"{split.name}/judge_outcome_acc"] = float(BinaryAccuracy()(predicted.long(), actual.long()))
                metrics[f"{split.name}/judge_outcome_bacc"] = balanced_accuracy(predicted, actual)
            metrics.update(self._process_accuracy(self._probe(split)))
        self.last_outcomes = outcomes
        return metrics
