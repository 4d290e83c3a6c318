"""Sandbox for untrusted Python programs (bubblewrap allow-list + per-sandbox uids + rlimits + seccomp + kills).

Functional tests compare the program's returned values outside its process (``_harness.py``, ``_wire.py``).
"""

from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status
from rlanything_core.sandbox.compare import OutputJudge, normalize_whitespace, outputs_match
from rlanything_core.sandbox.config import MAX_TIME_LIMIT_S, FunctionalTest, SandboxConfig, SandboxTest, StdinTest
from rlanything_core.sandbox.literal_call import LiteralCall, literal_call_test, parse_literal_call
from rlanything_core.sandbox.sandbox import Sandbox, classify
from rlanything_core.sandbox.verdict import ProgramResult, TestResult, Verdict

__all__ = [
    "MAX_TIME_LIMIT_S",
    "FunctionalTest",
    "LiteralCall",
    "OutputJudge",
    "ProgramResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxTest",
    "StdinTest",
    "TestResult",
    "Verdict",
    "bwrap_command",
    "bwrap_status",
    "classify",
    "literal_call_test",
    "normalize_whitespace",
    "outputs_match",
    "parse_literal_call",
]
