"""Coding environment: problems, loaders, code extraction, unit-test parsing and the single-turn task."""

from rlanything_core.envs.coding.extract import extract_code, parse_unit_test
from rlanything_core.envs.coding.livecodebench import decode_test_cases, load_livebench, load_livecodebench
from rlanything_core.envs.coding.loaders import (
    default_shared_dir,
    load_codecontests,
    load_humaneval,
    load_kickstart,
    load_leetcode,
    read_jsonl,
)
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask, ResponseResult

__all__ = [
    "CodingProblem",
    "CodingTask",
    "IOTest",
    "ResponseResult",
    "TestType",
    "decode_test_cases",
    "default_shared_dir",
    "extract_code",
    "load_codecontests",
    "load_humaneval",
    "load_kickstart",
    "load_leetcode",
    "load_livebench",
    "load_livecodebench",
    "parse_unit_test",
    "read_jsonl",
]
