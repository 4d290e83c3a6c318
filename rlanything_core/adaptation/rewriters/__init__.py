"""Task rewriters behind one protocol: ALFWorld goal swaps (LLM and rules), coding problems (LLM), TextWorld."""

from rlanything_core.adaptation.rewriters.alfworld_llm import AlfworldLLMRewriter
from rlanything_core.adaptation.rewriters.alfworld_rules import AlfworldRuleRewriter, EngineVerifier
from rlanything_core.adaptation.rewriters.coding import CodingRewriter, SandboxTestRunner
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskRewriter, TaskSpec
from rlanything_core.adaptation.rewriters.textworld import TextWorldParams, TextWorldRewriter

__all__ = [
    "AlfworldLLMRewriter",
    "AlfworldRuleRewriter",
    "Candidate",
    "CodingRewriter",
    "EngineVerifier",
    "RejectReason",
    "SandboxTestRunner",
    "TaskRewriter",
    "TaskSpec",
    "TextWorldParams",
    "TextWorldRewriter",
]
