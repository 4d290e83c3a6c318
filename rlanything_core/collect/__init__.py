"""Collectors: agent rollouts, judge votes, code samples and unit tests, plus collation into tensors."""

from rlanything_core.collect.action_selection import ActionSelector, BoxedIndexSelector, LikelihoodSelector, Selection
from rlanything_core.collect.agent import AgentCollector, EpisodeRunner, RolloutStats, SequentialRunner
from rlanything_core.collect.batching import (
    TokenRows,
    collate,
    judge_rows,
    policy_rows,
    rows_from_records,
    rows_from_sequences,
)
from rlanything_core.collect.judge import JudgeCollector, JudgeStats

__all__ = [
    "ActionSelector",
    "AgentCollector",
    "BoxedIndexSelector",
    "EpisodeRunner",
    "JudgeCollector",
    "JudgeStats",
    "LikelihoodSelector",
    "RolloutStats",
    "Selection",
    "SequentialRunner",
    "TokenRows",
    "collate",
    "judge_rows",
    "policy_rows",
    "rows_from_records",
    "rows_from_sequences",
]
