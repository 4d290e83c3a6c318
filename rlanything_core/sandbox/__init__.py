"""Sandbox for untrusted Python programs (bubblewrap + unprivileged uid + rlimits + process-group kill)."""

from rlanything_core.sandbox.bwrap import bwrap_status
from rlanything_core.sandbox.compare import OutputJudge, normalize_whitespace, outputs_match
from rlanything_core.sandbox.config import FunctionalTest, SandboxConfig, SandboxTest, StdinTest
from rlanything_core.sandbox.sandbox import Sandbox, classify
from rlanything_core.sandbox.verdict import ProgramResult, TestResult, Verdict

__all__ = [
    "FunctionalTest",
    "OutputJudge",
    "ProgramResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxTest",
    "StdinTest",
    "TestResult",
    "Verdict",
    "bwrap_status",
    "classify",
    "normalize_whitespace",
    "outputs_match",
]
