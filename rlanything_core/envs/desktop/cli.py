"""``python -m rlanything_core.envs.desktop run-task TASK.json --actions ACTIONS.py [--screenshot P] [--cache-dir D]``.

``--cache-dir`` names the task's file cache in OSWorld's layout (:mod:`.osworld_cache`).

ACTIONS.py holds one literal list (bare, or assigned to ``ACTIONS``) of pyautogui code strings and computer_13 dicts,
ending with ``"DONE"`` or ``"FAIL"``. The file is read with :func:`ast.literal_eval`, never executed here; every
action runs in the action sandbox. Prints one JSON object: ``score``, ``steps``, ``done``, ``error``, ``wall_s`` and
details (``task_id``, ``invalid_actions``, ``action_errors``, ``metrics``, mean ``timings_s``).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["load_actions", "main", "run_task"]


def load_actions(path: str | Path) -> list[Any]:
    """The action list of an ACTIONS.py file (see the module docstring).

    Raises:
        ValueError: the file holds no literal list (named in the message).
    """
    source = Path(path).read_text()
    tree = ast.parse(source, filename=str(path))
    for node in tree.body:
        value = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ACTIONS" for t in node.targets):
            value = node.value
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.List):
            value = node.value
        if value is not None:
            actions = ast.literal_eval(value)
            if not isinstance(actions, list):
                raise ValueError(f"{path}: ACTIONS must be a list, got {type(actions).__name__}")
            return actions
    raise ValueError(f"{path}: no literal list (bare, or 'ACTIONS = [...]') found")


def run_task(
    task_path: str | Path,
    actions: list[Any],
    *,
    screenshot: str | Path | None = None,
    env: Any = None,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Play ``actions`` on the task and evaluate; ``env`` (a :class:`LocalDesktopEnv`) is reused when given."""
    from rlanything_core.envs.desktop.env import LocalDesktopEnv
    from rlanything_core.envs.desktop.task import UnsupportedTaskError, load_task

    t0 = time.perf_counter()
    report: dict[str, Any] = {"task_id": None, "score": 0.0, "steps": 0, "done": False, "error": ""}
    try:
        task = load_task(task_path, cache_dir=cache_dir)
    except UnsupportedTaskError as exc:
        report.update(error=f"unsupported task: {exc}", wall_s=round(time.perf_counter() - t0, 3))
        return report
    own = env is None
    env = env or LocalDesktopEnv(screenshots=False)
    seen = {k: len(v) for k, v in env.timings.items()}
    try:
        env.reset(task)
        for action in actions:
            if env.done:
                break
            env.step(action)
        if screenshot is not None and env.display.alive:
            env.display.save_screenshot(screenshot)
        outcome = env.evaluate()
        errors = [e for e in (env.failure, outcome.error) if e]
        report.update(
            task_id=task.task_id,
            score=outcome.score,
            steps=env.steps,
            done=env.done,
            error="; ".join(dict.fromkeys(errors)),
            invalid_actions=env.invalid_actions,
            action_errors=env.action_errors,
            metrics=[list(m) for m in outcome.metrics],
            timings_s={
                k: round(sum(v[seen.get(k, 0) :]) / len(v[seen.get(k, 0) :]), 4)
                for k, v in env.timings.items()
                if v[seen.get(k, 0) :]
            },
        )
    finally:
        if own:
            env.close()
    report["wall_s"] = round(time.perf_counter() - t0, 3)
    return report


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status (0 when the run happened, whatever its score)."""
    parser = argparse.ArgumentParser(prog="python -m rlanything_core.envs.desktop")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run-task", help="play a list of actions on an OSWorld-format task and print its score")
    run.add_argument("task", help="the task JSON")
    run.add_argument("--actions", required=True, help="ACTIONS.py: a literal list of actions ending in DONE/FAIL")
    run.add_argument("--screenshot", default=None, help="write the final screen here (PNG)")
    run.add_argument("--cache-dir", default=None, help="the task files' cache, in OSWorld's layout")
    args = parser.parse_args(argv)
    try:
        actions = load_actions(args.actions)
    except (OSError, SyntaxError, ValueError) as exc:
        print(json.dumps({"score": 0.0, "steps": 0, "done": False, "error": f"bad actions file: {exc}", "wall_s": 0}))
        return 2
    print(json.dumps(run_task(args.task, actions, screenshot=args.screenshot, cache_dir=args.cache_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
