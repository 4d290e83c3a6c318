"""Environment adaptation: difficulty critic and acceptance rule (more modules: critic feedback, rewriters, pool)."""

from rlanything_core.adaptation.difficulty import (
    DEFAULT_BAND,
    DifficultyCritic,
    Direction,
    accept_rewrite,
    check_strict_band,
)

__all__ = [
    "DEFAULT_BAND",
    "DifficultyCritic",
    "Direction",
    "accept_rewrite",
    "check_strict_band",
]

# Critic feedback, task rewriters, task pool, metrics (environment adaptation, arXiv 2602.02488).
from rlanything_core.adaptation.feedback import (  # noqa: E402
    FailureNote,
    TaskFeedback,
    build_feedback,
    coding_feedback,
    high_risk_steps,
    success_rate,
)
from rlanything_core.adaptation.llm import BackendChatModel, ChatModel, ScriptedChatModel  # noqa: E402
from rlanything_core.adaptation.pool import Decision, TaskPool  # noqa: E402
from rlanything_core.adaptation.rewriters import (  # noqa: E402
    AlfworldLLMRewriter,
    AlfworldRuleRewriter,
    Candidate,
    CodingRewriter,
    RejectReason,
    TaskRewriter,
    TaskSpec,
    TextWorldRewriter,
)

__all__ += [
    "AlfworldLLMRewriter",
    "AlfworldRuleRewriter",
    "BackendChatModel",
    "Candidate",
    "ChatModel",
    "CodingRewriter",
    "Decision",
    "FailureNote",
    "RejectReason",
    "ScriptedChatModel",
    "TaskFeedback",
    "TaskPool",
    "TaskRewriter",
    "TaskSpec",
    "TextWorldRewriter",
    "build_feedback",
    "coding_feedback",
    "high_risk_steps",
    "success_rate",
]
