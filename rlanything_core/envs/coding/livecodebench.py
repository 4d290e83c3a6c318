"""LiveCodeBench and LiveBench coding questions from local JSON/JSONL files (for users who have them).

Fields read, LiveCodeBench (``code_generation_lite`` rows, one JSON object per line or a JSON list):
``question_id``, ``question_title``, ``question_content`` (statement), ``platform``, ``contest_date``,
``difficulty``, ``starter_code``, ``public_test_cases`` and ``private_test_cases`` (each a list, a JSON string of a
list, or LiveCodeBench's compressed string ``base64(zlib(pickle(json string)))``) of ``{input, output, testtype}``
with ``testtype`` ``functional`` or ``stdin``, and ``metadata`` (a dict or JSON string; ``func_name`` for
functional questions).

LiveBench (``livebench/coding`` ``question.jsonl``): ``question_id``, ``task`` (``LCB_generation`` or
``coding_completion``), ``turns[0]`` (the prompt shown to the model), ``public_test_cases``, ``private_test_cases``
(same encodings), ``original_json`` (a LiveCodeBench row: ``starter_code``, ``difficulty``, ``metadata``,
``question_title``), ``release_date``; for ``coding_completion`` also ``partial_solution``.

Functional tests (LeetCode style): every input line is one JSON argument and the output is JSON; the candidate's
``Solution().<func_name>`` is called with the arguments and its result compared with ``==``. The compressed
encoding is unpickled with an unpickler that refuses every class, so only plain data can come out of it.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import zlib
from pathlib import Path
from typing import Any

from rlanything_core.envs.coding.loaders import read_jsonl
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType

__all__ = ["decode_test_cases", "load_livebench", "load_livecodebench"]


_FUNCTIONAL_PREAMBLE = (
    "from typing import *\nfrom collections import *\nimport math, heapq, bisect, itertools, functools"
)


class _NoClassUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load class {module}.{name} from test-case data")


def decode_test_cases(value: Any, *, where: str = "") -> list[dict[str, Any]]:
    """Decode a test-case field (list, JSON string, or LiveCodeBench's compressed string) to a list of dicts.

    Raises:
        ValueError: the value is none of the supported encodings (``where`` names the record).
    """
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise ValueError(f"{where}: test cases must be a list or a string, got {type(value).__name__}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        try:
            raw = _NoClassUnpickler(io.BytesIO(zlib.decompress(base64.b64decode(value)))).load()
            parsed = json.loads(raw) if isinstance(raw, str | bytes) else raw
        except Exception as exc:
            raise ValueError(f"{where}: cannot decode test cases (not JSON, not base64/zlib/pickle): {exc}") from exc
    if not isinstance(parsed, list):
        raise ValueError(f"{where}: test cases must decode to a list, got {type(parsed).__name__}")
    return parsed


def _records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"question file not found: {p}")
    if p.suffix == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON list of questions")
        return data
    return list(read_jsonl(p))


def _functional_check(cases: list[dict[str, Any]], func_name: str) -> str:
    pairs = [(c["input"], c["output"]) for c in cases]
    return (
        "import json as _rla_json\n"
        f"_RLA_CASES = {pairs!r}\n"
        "def check(candidate):\n"
        "    for _inp, _out in _RLA_CASES:\n"
        "        _args = [_rla_json.loads(_l) for _l in _inp.split('\\n') if _l.strip()]\n"
        "        assert candidate(*_args) == _rla_json.loads(_out), (_inp, _out)\n"
        f"check(Solution().{func_name})\n"
    )


def _problem(
    row: dict[str, Any], *, source: str, pid: str, prompt: str, where: str, extra: dict[str, Any]
) -> CodingProblem:
    public = decode_test_cases(row.get("public_test_cases"), where=where)
    private = decode_test_cases(row.get("private_test_cases"), where=where)
    cases = public + private
    if not cases:
        raise ValueError(f"{where}: question {pid!r} has no test cases")
    meta = row.get("metadata") or {}
    if isinstance(meta, str):
        meta = json.loads(meta) if meta.strip() else {}
    functional = cases[0].get("testtype") == "functional"
    common: dict[str, Any] = {
        "id": f"{source}/{pid}",
        "source": source,
        "prompt": prompt,
        "starter_code": row.get("starter_code") or "",
        "difficulty": row.get("difficulty"),
        "metadata": {**extra, "platform": row.get("platform"), "contest_date": row.get("contest_date")},
    }
    if functional:
        func = meta.get("func_name")
        if not func:
            raise ValueError(f"{where}: functional question {pid!r} needs metadata.func_name")
        return CodingProblem(
            test_type=TestType.FUNCTIONAL,
            check_code=_functional_check(cases, func),
            preamble=_FUNCTIONAL_PREAMBLE,
            entry_point=f"Solution().{func}",
            sample_tests=tuple(IOTest(c["input"], c["output"]) for c in public),
            **common,
        )
    return CodingProblem(
        test_type=TestType.STDIN,
        tests=tuple(IOTest(c["input"], c["output"]) for c in cases),
        sample_tests=tuple(IOTest(c["input"], c["output"]) for c in public),
        **common,
    )


def load_livecodebench(path: str | os.PathLike[str]) -> list[CodingProblem]:
    """LiveCodeBench code-generation questions from a local JSON/JSONL file (fields in the module docstring)."""
    out = []
    for i, row in enumerate(_records(path), 1):
        where = f"{path}:{i}"
        pid = str(row.get("question_id") or i)
        prompt = str(row.get("question_content") or "")
        if not prompt:
            raise ValueError(f"{where}: missing field 'question_content'")
        out.append(
            _problem(
                row,
                source="livecodebench",
                pid=pid,
                prompt=prompt,
                where=where,
                extra={"title": row.get("question_title")},
            )
        )
    return out


def load_livebench(path: str | os.PathLike[str]) -> list[CodingProblem]:
    """LiveBench coding questions from a local ``question.jsonl`` (fields in the module docstring)."""
    out = []
    for i, rec in enumerate(_records(path), 1):
        where = f"{path}:{i}"
        turns = rec.get("turns") or []
        if not turns:
            raise ValueError(f"{where}: missing field 'turns'")
        original = rec.get("original_json") or {}
        if isinstance(original, str):
            original = json.loads(original)
        row = {**original, **{k: rec[k] for k in ("public_test_cases", "private_test_cases") if k in rec}}
        extra = {
            "task": rec.get("task"),
            "release_date": rec.get("release_date"),
            "partial_solution": rec.get("partial_solution"),
            "title": original.get("question_title"),
        }
        out.append(
            _problem(
                row,
                source="livebench",
                pid=str(rec.get("question_id") or i),
                prompt=str(turns[0]),
                where=where,
                extra=extra,
            )
        )
    return out
