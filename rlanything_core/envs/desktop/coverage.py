"""How much of an OSWorld checkout runs here: tasks loaded and refused per domain, and why.

``python -m rlanything_core.envs.desktop.coverage EVALUATION_EXAMPLES [--cache-dir DIR] [--domains D ...]``

Without ``--cache-dir`` every file a task downloads or compares with is stood in for by a placeholder in a temporary
cache of OSWorld's layout, so that the count measures the checks, not the files (a real cache measures both).
Prints one line per domain (``domain tasks=N loaded=L refused=R``) and, under it, each refusal reason with its count.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.osworld_cache import cloud_cache_path, download_cache_path
from rlanything_core.envs.desktop.task import UnsupportedTaskError, load_task
from rlanything_core.envs.desktop.task_folder import find_task_files

__all__ = ["domain_coverage", "main", "write_placeholders"]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def write_placeholders(raw: dict[str, Any], cache_dir: Path) -> int:
    """A placeholder file for each file task ``raw`` downloads or compares with; returns how many were written."""
    paths = []
    steps = list(raw.get("config") or []) + list(raw.get("evaluator", {}).get("postconfig") or [])
    for step in steps:
        if isinstance(step, dict) and step.get("type") == "download":
            for f in step.get("parameters", {}).get("files", []):
                if isinstance(f, dict) and isinstance(f.get("url"), str) and isinstance(f.get("path"), str):
                    paths.append(download_cache_path(cache_dir, raw["id"], f["url"], f["path"]))
    for cfg in _as_list(raw.get("evaluator", {}).get("expected") or []):
        if isinstance(cfg, dict) and cfg.get("type") == "cloud_file":
            paths += [cloud_cache_path(cache_dir, raw["id"], d) for d in _as_list(cfg.get("dest"))]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("placeholder\n")
    return len(paths)


def _reason(message: str) -> str:
    """A refusal message with its task-specific parts (paths, ids, commands) cut, for counting."""
    head = re.sub(r"^(config|evaluator\.\w+)\[\d+\]: ", "", message)
    head = re.sub(r" \(supported: .*", "", head)
    return re.sub(r"(, which only OSWorld's VM has|; expected it at|: no terminal).*", r"\1", head)[:120]


def domain_coverage(
    examples: str | Path, domain: str, *, cache_dir: str | Path | None = None
) -> tuple[int, int, Counter[str]]:
    """``(tasks, loaded, Counter of refusal reasons)`` for one domain of an OSWorld checkout."""
    files = find_task_files(examples, [domain])
    reasons: Counter[str] = Counter()
    loaded = 0
    with tempfile.TemporaryDirectory(prefix="osworld-cache-") as tmp:
        cache = Path(cache_dir) if cache_dir is not None else Path(tmp)
        for path in files:
            if cache_dir is None:
                write_placeholders(json.loads(path.read_text()), cache)
            try:
                load_task(path, cache_dir=cache)
                loaded += 1
            except UnsupportedTaskError as exc:
                reasons[_reason(str(exc))] += 1
    return len(files), loaded, reasons


def main(argv: list[str] | None = None) -> int:
    """Entry point (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m rlanything_core.envs.desktop.coverage")
    parser.add_argument("examples", help="OSWorld's evaluation_examples folder")
    parser.add_argument("--cache-dir", default=None, help="a real file cache (default: placeholders)")
    parser.add_argument("--domains", nargs="*", default=None, help="default: every domain the checkout has")
    args = parser.parse_args(argv)
    index = json.loads((Path(args.examples) / "test_all.json").read_text())
    domains = args.domains or sorted(d for d in index if (Path(args.examples) / "examples" / d).is_dir())
    total = [0, 0]
    for domain in domains:
        tasks, loaded, reasons = domain_coverage(args.examples, domain, cache_dir=args.cache_dir)
        total[0] += tasks
        total[1] += loaded
        print(f"{domain} tasks={tasks} loaded={loaded} refused={tasks - loaded}")
        for reason, count in reasons.most_common():
            print(f"    {count:3d}  {reason}")
    print(f"all tasks={total[0]} loaded={total[1]} ({100 * total[1] / max(total[0], 1):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
