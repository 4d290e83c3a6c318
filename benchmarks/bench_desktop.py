"""Per-step costs of the local desktop environment: `python -m benchmarks.bench_desktop [--tasks N]`.

Plays the shipped Calc tasks' scripted solutions on one display (screenshots on) and prints the mean and median of
reset (fresh LibreOffice + the task's set-up), step (one action in the sandbox + settle + screenshot), screenshot
alone, and evaluate (postconfig save + metrics), plus the start of the display and the scores (all 1.0 expected).
"""

from __future__ import annotations

import argparse
import statistics
import time

from rlanything_core.envs.desktop.cli import load_actions, run_task
from rlanything_core.envs.desktop.env import LocalDesktopEnv
from rlanything_core.envs.desktop.variants import TASKS_DIR, shipped_tasks


def main() -> None:
    """Run the benchmark and print one line per cost."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=None, help="the first N shipped tasks (default: all)")
    args = parser.parse_args()
    tasks = shipped_tasks()[: args.tasks]
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
    print(f"tasks={len(tasks)} scores_all_one={all(s == 1.0 for s in scores)} display_start_s={start_s:.3f}")
    for line in failed:
        print(f"  not 1.0: {line}")
    for name, values in timings.items():
        if values:
            print(
                f"{name:<10} n={len(values):<4} mean_s={statistics.mean(values):.3f} "
                f"median_s={statistics.median(values):.3f}"
            )


if __name__ == "__main__":
    main()
