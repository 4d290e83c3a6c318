"""Collectors: agent rollouts, judge votes, code samples and unit tests, as records (``rlanything_core.records``).

Their collation into tensors is the data model's (``rlanything_core.types``).
"""

from rlanything_core.collect.action_selection import ActionSelector, BoxedIndexSelector, LikelihoodSelector, Selection
from rlanything_core.collect.agent import AgentCollector, EpisodeRunner, RolloutStats, SequentialRunner
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
]
