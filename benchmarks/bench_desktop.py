"""Per-step costs of the local desktop environment: `python -m benchmarks.bench_desktop [--tasks N] [--trees A B]`.

Plays the shipped Calc tasks' scripted solutions on one display (screenshots on) and prints the mean and median of
reset (fresh LibreOffice + the task's set-up), step (one action in the sandbox + settle + screenshot), screenshot
alone, and evaluate (postconfig save + metrics), plus the start of the display and the scores (all 1.0 expected).

``--trees OLD NEW`` compares two checkouts side by side in one run: each round runs the benchmark once per tree, in a
fresh process running this file with ``PYTHONPATH`` set to that tree, alternating the order between rounds (a load
change on a shared machine then hits both), and prints each tree's figures over all rounds and the ratio NEW / OLD.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["compare", "main", "measure"]


def measure(n_tasks: int | None) -> dict[str, Any]:
    """Run the benchmark in this process; returns ``{"tasks", "scores", "failed", "start_s", "timings"}``."""
    from rlanything_core.envs.desktop.cli import load_actions, run_task
    from rlanything_core.envs.desktop.env import LocalDesktopEnv
    from rlanything_core.envs.desktop.variants import TASKS_DIR, shipped_tasks

    tasks = shipped_tasks()[:n_tasks]
    t0 = time.perf_counter()
    env = LocalDesktopEnv(screenshots=True)
    start_s = time.perf_counter() - t0
    scores = []
    failed = []
    try:
        for task in tasks:
            actions = load_actions(TASKS_DIR / "solutions" / f"{task.task_id}.good.py")
            report = run_task(TASKS_DIR / f"{task.task_id}.json", actions, env=env)
            scores.append(report["score"])
            if report["score"] != 1.0:
                failed.append(f"{task.task_id}: {report['error']}")
        timings = {k: list(v) for k, v in env.timings.items()}
    finally:
        env.close()
    return {"tasks": len(tasks), "scores": scores, "failed": failed, "start_s": start_s, "timings": timings}


def _print(result: dict[str, Any], label: str = "") -> None:
    scores = result["scores"]
    ok = all(s == 1.0 for s in scores)
    print(f"{label}tasks={result['tasks']} scores_all_one={ok} display_start_s={result['start_s']:.3f}")
    for line in result["failed"]:
        print(f"  not 1.0: {line}")
    for name, values in result["timings"].items():
        if values:
            print(
                f"{label}{name:<10} n={len(values):<4} mean_s={statistics.mean(values):.3f} "
                f"median_s={statistics.median(values):.3f}"
            )


def compare(trees: list[Path], n_tasks: int | None, rounds: int) -> dict[str, dict[str, Any]]:
    """Run the benchmark ``rounds`` times per tree (fresh processes, alternating order); pooled results by tree."""
    if len(trees) != 2:
        raise ValueError(f"trees must name two checkouts (old, new), got {trees}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    pooled: dict[str, dict[str, Any]] = {}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            # this file, measuring the package of ``tree`` (an old tree's own benchmark may lack --json)
            argv = [sys.executable, str(Path(__file__).resolve()), "--json"]
            if n_tasks is not None:
                argv += ["--tasks", str(n_tasks)]
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            empty: dict[str, Any] = {"tasks": 0, "scores": [], "failed": [], "start_s": 0.0, "timings": {}}
            into = pooled.setdefault(str(tree), empty)
            into["tasks"] += result["tasks"]
            into["scores"] += result["scores"]
            into["failed"] += result["failed"]
            into["start_s"] = max(into["start_s"], result["start_s"])
            for name, values in result["timings"].items():
                into["timings"].setdefault(name, []).extend(values)
            print(f"round {r + 1}/{rounds}: {tree} done", flush=True)
    return pooled


def main() -> None:
    """Run the benchmark (or the comparison of two trees) and print one line per cost."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=None, help="the first N shipped tasks (default: all)")
    parser.add_argument("--trees", nargs=2, type=Path, default=None, help="two checkouts to compare (old, new)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per tree with --trees (default: 2)")
    parser.add_argument("--json", action="store_true", help="print the raw result as one JSON line")
    args = parser.parse_args()
    if args.trees is None:
        result = measure(args.tasks)
        if args.json:
            print(json.dumps(result))
        else:
            _print(result)
        return
    trees = [t.resolve() for t in args.trees]
    pooled = compare(trees, args.tasks, args.rounds)
    old, new = (pooled[str(t)] for t in trees)
    for label, result in (("old ", old), ("new ", new)):
        print(f"== {label.strip()}: {trees[0] if label == 'old ' else trees[1]}")
        _print(result, label)
    for name in new["timings"]:
        a, b = old["timings"].get(name), new["timings"][name]
        if a and b:
            print(
                f"ratio {name:<10} mean {statistics.mean(b) / statistics.mean(a):.2f}x "
                f"median {statistics.median(b) / statistics.median(a):.2f}x"
            )


if __name__ == "__main__":
    main()
