"""CPU seconds per phase of an iteration of the full arm and of an evaluation: `python -m benchmarks.bench_iteration`.

    python -m benchmarks.bench_iteration                          # this checkout: one iteration + evaluation
    python -m benchmarks.bench_iteration --trees 756dceb HEAD      # old and new code side by side, with ratios
    python -m benchmarks.bench_iteration --trees 756dceb HEAD --write-rates   # and store the new tree's rates

One run of ``experiments/train.py`` shaped like an arm of ``+profile=full`` (``ablate.yaml`` with that profile: its
tasks_per_iteration, group size, votes, models, judge, optimizer and evaluation settings, the full arm), for one
iteration and then its final evaluation on ``--games`` games of each evaluation split (a fixed fraction of the whole
splits, stated in the output; the judge votes on its ``eval.judge_episodes`` and the planner labels its probe set as in
the real run). Differences from the real run, for a clean measurement: no warm start (the costs per step do not
depend on the weights; episode lengths do, and are counted; without wins no group carries an advantage, the update
trains no row and its rate is not measured: the estimator keeps its own, and the override
``model.policy_init=<a warm start's policy_seed0.pt>`` measures it), the environments in this process
(``setting.env_workers=1``: every CPU second is this process's, or a waited child's), the probe set labelled here (no
shared probe file).

CPU time is the process's user + system time plus that of its waited children (``os.times``), so threads and planner
processes count. Each phase is exclusive: a phase's time excludes the phases it calls (the frozen bottom layers inside
the judge's scoring are the frozen-bottom phase, by consumer). The phases: the frozen bottom layers (by consumer:
rollouts, judge, update), the update (both models, above the frozen layers), the judge's and the policy's scoring
above the frozen layers, the planner's labels, the engine's resets and steps, checkpoint + adaptation + rows, and
everything else (building the run, loading the games' files) as ``other``.

``--trees OLD NEW`` takes two checkouts or git revisions (a revision is exported to a temporary folder with ``git
archive``) and runs this file once per tree and round in a fresh process with ``PYTHONPATH`` set to that tree,
alternating the order between rounds (a load change on the shared machine hits both), then prints each phase's CPU
seconds side by side with the ratio NEW / OLD, and the minutes of each ablation profile that the budget estimator
(``rlanything_core/ablation/budget.py``) gives with each tree's measured per-step rates. ``--new-override X``
adds the override ``X`` to the new tree's runs only (``--trees HEAD HEAD --new-override X``: the switch ``X`` against
the same code without it). ``--write-rates`` stores
the new tree's rates in ``rlanything_core/conf/iteration_rates.json``, the figures the estimator uses.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PhaseClock", "compare", "main", "measure", "rates"]

ROOT = Path(__file__).resolve().parents[1]
RATES_FILE = ROOT / "rlanything_core" / "conf" / "iteration_rates.json"
PROFILES = ("default", "full", "step_only", "hard")
# train.py's keys that the ablation forwards to every arm (ablation/runs.py FORWARDED; model: its plain keys)
FORWARDED = ("tasks_per_iteration", "group_size", "num_votes", "lam", "balance_judge_targets", "policy_band",
             "judge_band", "env_band", "max_rewrites_per_iteration", "optim", "eval", "setting", "trainer")  # fmt: skip
Counter = Callable[[Any, Any], tuple[str, int]]
CONSUMERS = {"policy scoring": "rollouts", "judge scoring": "judge", "update": "update"}
# (module, class or None, attribute) -> phase; a target missing from a tree is skipped (named in the output)
TARGETS: tuple[tuple[str, str | None, str, str], ...] = (
    ("rlanything_core.loop.rlanything_loop", "RLAnythingLoop", "evaluate", "evaluation"),
    ("rlanything_core.collect.agent", "AgentCollector", "collect", "policy scoring"),
    ("rlanything_core.collect.judge", "JudgeCollector", "judge", "judge scoring"),
    ("rlanything_core.training.update", "ModelUpdate", "__call__", "update"),
    ("rlanything_core.models.encoder", "SplitEncoder", "_bottom_uncached", "frozen bottom"),
    ("rlanything_core.collect.agent", "SequentialRunner", "reset_all", "engine resets + steps"),
    ("rlanything_core.collect.agent", "SequentialRunner", "step_all", "engine resets + steps"),
    ("rlanything_core.loop.judge_probe", None, "label_probe", "planner labels"),
    ("rlanything_core.loop.rlanything_loop", "RLAnythingLoop", "checkpoint", "checkpoint, adaptation, rows"),
    ("rlanything_core.loop.driver", "AgentLoopDriver", "adapt", "checkpoint, adaptation, rows"),
    ("rlanything_core.loop.driver", "AgentLoopDriver", "rows", "checkpoint, adaptation, rows"),
)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all threads) and of its waited children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class PhaseClock:
    """Exclusive CPU seconds per ``(part, phase)``: a wrapped call charges its time minus that of wrapped calls inside.

    ``part`` is ``evaluation`` inside ``RLAnythingLoop.evaluate``, else ``iteration``; the frozen bottom's phase names
    its consumer (the nearest enclosing scoring or update).
    """

    def __init__(self, clock: Callable[[], float] = cpu_seconds) -> None:
        self.clock = clock
        self.seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._stack: list[tuple[str, str]] = [("iteration", "other")]
        self._mark = clock()

    def _charge(self) -> None:
        now = self.clock()
        part, phase = self._stack[-1]
        # the evaluation's own work (not in a phase inside it) is its "other"; the stack keeps its name for :meth:`key`
        self.seconds[part]["other" if phase == "evaluation" else phase] += now - self._mark
        self._mark = now

    def key(self, phase: str) -> tuple[str, str]:
        """The ``(part, phase)`` a call of ``phase`` is charged to, given the calls now running."""
        part = "evaluation" if any(p == "evaluation" for _, p in self._stack) or phase == "evaluation" else "iteration"
        if phase == "evaluation":
            return part, "other"
        if phase == "frozen bottom":
            consumer = next((CONSUMERS[p] for _, p in reversed(self._stack) if p in CONSUMERS), "other")
            return part, f"frozen bottom ({consumer})"
        return part, phase

    @contextlib.contextmanager
    def phase(self, phase: str) -> Iterator[tuple[str, str]]:
        """Charge the time inside to ``phase`` (see :meth:`key`)."""
        self._charge()
        key = self.key(phase)
        self._stack.append((key[0], "evaluation" if phase == "evaluation" else key[1]))
        try:
            yield key
        finally:
            self._charge()
            self._stack.pop()

    def wrap(self, fn: Callable[..., Any], phase: str, count: Counter | None = None) -> Any:
        """``fn`` timed as ``phase``; ``count(args, result)`` adds ``(name, n)`` to the part's counts."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(phase) as (part, _):
                result = fn(*args, **kwargs)
            if count is not None:
                name, n = count(args, result)
                self.counts[part][name] += n
            return result

        return timed


def _counter(attribute: str) -> Counter | None:
    """What a wrapped call counts: engine steps taken, steps the judge votes on, frozen-bottom texts run."""
    if attribute == "step_all":
        return lambda args, result: ("steps", sum(r is not None for r in result))
    if attribute == "judge":
        return lambda args, result: ("judged_steps", sum(len(e.steps) for e in args[1]))
    if attribute == "_bottom_uncached":
        return lambda args, result: ("bottom_texts", len(result))
    if attribute == "label_probe":
        return lambda args, result: ("planner_steps", sum(len(e.steps) for e in result.episodes))
    if attribute == "__call__":  # ModelUpdate: the rows it trained on (none when no group carried an advantage)
        return lambda args, result: ("trained_rows", 0 if args[1] is None else int(args[1].num_rows))
    return None


def instrument(clock: PhaseClock) -> list[str]:
    """Wrap every target of :data:`TARGETS` present in this tree (also where a module imported a function by name).

    Returns:
        The targets this tree lacks.
    """
    missing = []
    for module_name, cls_name, attribute, phase in TARGETS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(f"{module_name}.{attribute}")
            continue
        owner = getattr(module, cls_name, None) if cls_name else module
        original = getattr(owner, attribute, None) if owner is not None else None
        if original is None:
            missing.append(f"{module_name}.{cls_name or ''}.{attribute}")
            continue
        timed = clock.wrap(original, phase, _counter(attribute))
        setattr(owner, attribute, timed)
        if cls_name is None:  # ``from module import fn`` elsewhere: replace those names too
            for other in list(sys.modules.values()):
                ours = getattr(other, "__name__", "").startswith("rlanything_core")
                if ours and getattr(other, attribute, None) is original:
                    setattr(other, attribute, timed)
    return missing


def _flat(prefix: str, node: Any, out: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), value, out)
    else:
        out.append(f"++{prefix}={json.dumps(node) if not isinstance(node, str) else node}")


def arm_overrides(games: int, run_dir: Path, extra: list[str]) -> list[str]:
    """train.py's overrides of the full arm of ``+profile=full`` (as ablate.py forwards them), for this benchmark."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("ablate", overrides=["+setting=alfworld", "+profile=full"])
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    forwarded: list[str] = []
    for key in FORWARDED:
        if key in container:
            _flat(key, container[key], forwarded)
    model = {k: v for k, v in container["model"].items() if k not in ("policy", "judge")}
    _flat("model", model, forwarded)
    return [
        "+setting=alfworld", "arm=full", "seed=0", f"run_dir={run_dir}", *forwarded,
        "iterations=1", f"eval.games={games}", "eval.every=0", "eval.at_start=false", "setting.env_workers=1",
        "progress=false", "resume=false", *extra,
    ]  # fmt: skip


def measure(games: int, extra: list[str]) -> dict[str, Any]:
    """One iteration of the full arm and its final evaluation in this process; seconds and counts by part and phase."""
    from hydra import compose, initialize_config_dir

    from rlanything_core.assembly.train_app import run_training
    from rlanything_core.conf import CONF_DIR

    clock = PhaseClock()
    missing = instrument(clock)
    with tempfile.TemporaryDirectory(prefix="bench-iteration-") as tmp:
        overrides = arm_overrides(games, Path(tmp) / "run", extra)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose("train", overrides=overrides)
        started = cpu_seconds()
        run_training(cfg)
        total = cpu_seconds() - started
        clock._charge()
    return {
        "games": games,
        "total_s": total,
        "seconds": {p: dict(v) for p, v in clock.seconds.items()},
        "counts": {p: dict(v) for p, v in clock.counts.items()},
        "missing": missing,
        "episodes_per_iteration": int(cfg.tasks_per_iteration) * int(cfg.group_size),
        "model": str(cfg.model.name),
    }


def rates(result: dict[str, Any]) -> dict[str, float]:
    """Per-step rates of the budget estimator (``StepCosts`` fields, CPU seconds) from one measurement.

    policy_s: the policy's scoring and frozen bottom per engine step (training and evaluation pooled); engine_s: the
    engine per step; judge_s: the judge's scoring and frozen bottom per judged step; update_s: the update and its frozen
    bottom per training step; planner_s: the planner per labelled step; iteration_s: checkpoint, adaptation and rows per
    iteration. ``update_s`` is left out when the update trained no row (no group carried an advantage: no warm start,
    no win): a zero would make the estimator count training as free of updates; it then keeps its own figure.
    """
    sec = result["seconds"]
    cnt = result["counts"]
    it, ev = sec.get("iteration", {}), sec.get("evaluation", {})
    cit, cev = cnt.get("iteration", {}), cnt.get("evaluation", {})

    def both(phase: str) -> float:
        return it.get(phase, 0.0) + ev.get(phase, 0.0)

    steps = max(1, cit.get("steps", 0) + cev.get("steps", 0))
    judged = max(1, cit.get("judged_steps", 0) + cev.get("judged_steps", 0))
    measured = {
        "policy_s": (both("policy scoring") + both("frozen bottom (rollouts)")) / steps,
        "engine_s": both("engine resets + steps") / steps,
        "judge_s": (both("judge scoring") + both("frozen bottom (judge)")) / judged,
        "update_s": (it.get("update", 0.0) + it.get("frozen bottom (update)", 0.0)) / max(1, cit.get("steps", 0)),
        "planner_s": both("planner labels") / max(1, cev.get("planner_steps", 0) + cit.get("planner_steps", 0)),
        "iteration_s": it.get("checkpoint, adaptation, rows", 0.0),
    }
    if cit.get("trained_rows", 0) == 0:
        del measured["update_s"]
    return measured


def _export(tree: str, into: Path) -> Path:
    """``tree`` if it is a folder, else the git revision ``tree`` of this repository exported under ``into``."""
    path = Path(tree)
    if path.is_dir():
        return path.resolve()
    out = into / tree.replace("/", "_")
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", tree], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    return out


def compare(trees: list[Path], games: int, rounds: int, extra: list[str],
            new_extra: Sequence[str] = ()) -> list[list[dict[str, Any]]]:  # fmt: skip
    """Each tree's measurements, ``rounds`` per tree in fresh processes, alternating the order between rounds.

    ``new_extra``: overrides for the new tree's runs only (a switch measured against the same code without it).
    """
    if len(trees) != 2:
        raise ValueError(f"trees: expected two checkouts (old, new), got {trees}")
    if rounds < 1:
        raise ValueError(f"rounds: expected >= 1, got {rounds}")
    from rlanything_core.data_dir import DATA_ENV, data_dir

    results: list[list[dict[str, Any]]] = [[], []]
    for r in range(rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            argv = [sys.executable, str(Path(__file__).resolve()), "--json", "--games", str(games), *extra,
                    *(new_extra if i == 1 else ())]  # fmt: skip
            # an exported revision lives in a temporary folder, with no ../shared beside it: this checkout's data
            env = {**os.environ, "PYTHONPATH": str(trees[i]), DATA_ENV: str(data_dir())}
            started = time.monotonic()
            done = subprocess.run(argv, cwd=trees[i], env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{trees[i]}: the benchmark failed ({done.returncode}):\n{done.stderr[-3000:]}")
            results[i].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}/{rounds}: {trees[i]} done in {time.monotonic() - started:.0f} s wall", flush=True)
    return results


def _mean_table(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for result in results:
        for part, phases in result["seconds"].items():
            for phase, s in phases.items():  # "evaluation": an earlier measurement's name of the evaluation's other
                table[part]["other" if phase == "evaluation" else phase] += s / len(results)
    return table


def _mean_rates(results: list[dict[str, Any]]) -> dict[str, float]:
    all_rates = [rates(r) for r in results]
    common = [k for k in all_rates[0] if all(k in r for r in all_rates)]  # update_s: only if every round trained
    return {k: sum(r[k] for r in all_rates) / len(all_rates) for k in common}


def profile_minutes(measured: dict[str, float]) -> dict[str, float]:
    """Minutes of each ablation profile that the budget estimator gives with ``measured`` rates."""
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    try:
        budget = importlib.import_module("rlanything_core.ablation.budget")
    except ImportError:
        budget = importlib.import_module("experiments.ablation_budget")
    out = {}
    for profile in PROFILES:
        extra = [] if profile == "default" else [f"+profile={profile}"]
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose("ablate", overrides=["+setting=alfworld", *extra])
        plan, costs = budget.plan_from_config(cfg, 2)
        known = set(costs.__dataclass_fields__)
        costs = type(costs)(**{**costs.__dict__, **{k: v for k, v in measured.items() if k in known}})
        out[profile] = budget.estimate_seconds(plan, costs)["total"] / 60
    return out


def print_table(labels: list[str], tables: list[dict[str, dict[str, float]]], games: int) -> None:
    """Per part and phase: each tree's mean CPU seconds, and NEW / OLD when there are two."""
    print(f"CPU seconds per phase (exclusive; evaluation on {games} games per split)")
    head = " ".join(f"{label:>10}" for label in labels) + ("   new/old" if len(labels) == 2 else "")
    for part in ("iteration", "evaluation"):
        phases = sorted({p for t in tables for p in t.get(part, {})}, key=lambda p: -tables[-1].get(part, {}).get(p, 0))
        print(f"== {part:<34} {head}")
        totals = [sum(t.get(part, {}).values()) for t in tables]
        for phase in [*phases, "total"]:
            values = totals if phase == "total" else [t.get(part, {}).get(phase, 0.0) for t in tables]
            line = f"   {phase:<34} " + " ".join(f"{v:>10.1f}" for v in values)
            if len(values) == 2:
                line += f"   {values[1] / values[0]:>7.2f}x" if values[0] > 0 else "         -"
            print(line)


def main(argv: list[str] | None = None) -> None:
    """Measure this checkout, or compare two trees (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=8, help="evaluation games per split (default: 8)")
    parser.add_argument("--trees", nargs=2, default=None, help="two checkouts or git revisions (old, new)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per tree with --trees (default: 1)")
    parser.add_argument("--json", action="store_true", help="print the raw measurement as one JSON line")
    parser.add_argument("--save", type=Path, default=None, help="with --trees: also write the raw measurements here")
    parser.add_argument("--load", nargs=2, type=Path, default=None, help="compare two saved --json outputs (old, new)")
    parser.add_argument("--write-rates", action="store_true", help=f"store the (new) tree's rates in {RATES_FILE}")
    parser.add_argument("--new-override", action="append", default=[], metavar="OVERRIDE",
                        help="with --trees: a Hydra override for the new tree's runs only (repeatable): a switch "
                             "measured against the same code without it, e.g. --trees HEAD HEAD --new-override "
                             "model.policy.bucket_rows=0")  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="more Hydra overrides for the run (both trees)")
    args = parser.parse_args(argv)
    if args.games < 1:
        raise SystemExit(f"--games: expected >= 1, got {args.games}")
    if args.load is not None:
        results = [[json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
                   for path in args.load]  # fmt: skip
        labels = ["old", "new"]
        print(f"old = {args.load[0]}, new = {args.load[1]} (saved measurements)")
    elif args.trees is None:
        results = [[measure(args.games, args.overrides)]]
        if args.json:
            print(json.dumps(results[0][0]))
            return
        labels = ["this tree"]
    else:
        with tempfile.TemporaryDirectory(prefix="bench-iteration-trees-") as tmp:
            trees = [_export(t, Path(tmp)) for t in args.trees]
            results = compare(trees, args.games, args.rounds, args.overrides, args.new_override)
        if args.save is not None:
            args.save.write_text(json.dumps(results) + "\n")
        labels = ["old", "new"]
        switch = f" with {' '.join(args.new_override)}" if args.new_override else ""
        print(f"old = {args.trees[0]}, new = {args.trees[1]}{switch}, {args.rounds} round(s) each, {args.games} games "
              "a split")  # fmt: skip
    for label, res in zip(labels, results):
        if res[0]["missing"]:
            print(f"{label}: not instrumented (absent): {', '.join(res[0]['missing'])}")
        print(f"{label}: counts {json.dumps(res[0]['counts'])}")
    print_table(labels, [_mean_table(r) for r in results], args.games)
    measured = [_mean_rates(r) for r in results]
    for label, m in zip(labels, measured):
        unmeasured = "" if "update_s" in m else (" update_s=not measured (the update trained no row: give "
                                                 "model.policy_init=<a warm start>; the estimator's figure is used)")
        print(f"{label} rates (CPU s): " + " ".join(f"{k}={v:.4f}" for k, v in m.items()) + unmeasured)
    minutes = [profile_minutes(m) for m in measured]
    for profile in PROFILES:
        values = [m[profile] for m in minutes]
        ratio = f"   new/old {values[1] / values[0]:.2f}x" if len(values) == 2 else ""
        print(f"profile {profile:<10} estimated minutes: " + " ".join(f"{v:7.1f}" for v in values) + ratio)
    if args.write_rates:
        note = {"command": "python -m benchmarks.bench_iteration " + " ".join(argv or sys.argv[1:]),
                "date": time.strftime("%Y-%m-%d", time.gmtime()), "games_per_split": args.games,
                "model": results[-1][0]["model"],
                "rounds": len(results[-1]), "unit": "CPU seconds, one thread (scale=cpu: torch_threads=1)"}  # fmt: skip
        text = json.dumps({"measured": note, "rates": {k: round(v, 4) for k, v in measured[-1].items()}}, indent=2)
        tmp_path = RATES_FILE.with_suffix(".json.tmp")
        tmp_path.write_text(text + "\n")
        tmp_path.replace(RATES_FILE)  # atomically
        print(f"wrote {RATES_FILE}")


if __name__ == "__main__":
    main()
