"""What an ablation config will cost, added up from per-step costs (printed by the ablation before it starts).

A step of an episode costs the policy's scoring of the admissible commands plus the engine's step, and, where the judge
votes, one judge pass; a trained-on step costs its share of the update (old log-probs, forward and backward). The
judge's process accuracy is measured on a fixed probe set of planner-labelled steps
(``rlanything_core/loop/judge_probe.py``): the planner labels them once, in the first "before" evaluation, and
every later evaluation or judge-only probe costs one judge pass per probe step. An episode of ``limit`` steps is won
after ``won_steps`` steps on average with probability ``success``, else runs to the limit. Runs (a seed's "before" or
one arm) go to ``jobs`` parallel workers, one core each; the warm start runs once before them. The defaults of
:class:`StepCosts` are this project's figures for the encoder policy on one core of the 2-core CPU machine;
for the model they were measured on, the rates that ``python -m benchmarks.bench_iteration --write-rates`` measured
(CPU seconds per phase of one iteration of the full arm and of an evaluation,
``rlanything_core/conf/iteration_rates.json``: :func:`measured_costs`) replace them, and the ``budget`` section of the
config overrides both. The result is an estimate to plan with, not a measurement.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlanything_core.conf import CONF_DIR
from rlanything_core.envs.alfworld.data import list_games, resolve_data_root

__all__ = [
    "CALIBRATION",
    "AblationPlan",
    "StepCosts",
    "arm_seconds",
    "calibration_note",
    "estimate_seconds",
    "RATES_FILE",
    "load_factor",
    "measured_costs",
    "plan_from_config",
]

RATES_FILE = Path(CONF_DIR) / "iteration_rates.json"
"""The per-step rates measured by ``python -m benchmarks.bench_iteration --write-rates`` (and on what model)."""


@dataclass(frozen=True)
class StepCosts:
    """Seconds per unit of work, and the episode-length model.

    Attributes:
        policy_s: the policy's scoring of one step (state embedding, command scores).
        engine_s: ALFWorld's engine step.
        judge_s: one step's judge pass (its m votes come from one pass).
        planner_s: one planner label (the probe set's oracle, labelled once; ~1.5 s with the games' first resets).
        update_s: one trained-on step's update work (old log-probs, forward, backward).
        iteration_s: an iteration's own work besides its steps (checkpoint, adaptation, rows).
        run_overhead_s: starting one run (building the models, loading games).
        warm_start_s: the supervised warm start, cold (made once, shared by the seeds).
        success: the probability an episode is won.
        won_steps: the mean length of a won episode.
    """

    policy_s: float = 0.035
    engine_s: float = 0.015
    judge_s: float = 0.040
    planner_s: float = 1.5
    update_s: float = 0.03
    iteration_s: float = 0.0
    run_overhead_s: float = 20.0
    warm_start_s: float = 240.0
    success: float = 0.35
    won_steps: float = 12.0

    def episode_steps(self, limit: int) -> float:
        """Expected steps of one episode with step limit ``limit``."""
        return self.success * min(self.won_steps, limit) + (1.0 - self.success) * limit


@dataclass(frozen=True)
class AblationPlan:
    """The parts of an ablation config that set its cost.

    Attributes:
        seeds: how many seeds.
        jobs: runs at once (one core each).
        arms: the trained arms (without "before").
        iterations: iterations per arm.
        episodes_per_iteration: training episodes per iteration (tasks x group size).
        rewrite_episodes: extra episodes per iteration of the full arm (rewritten tasks x group size).
        max_steps: the training step limit.
        eval_max_steps: the evaluation step limit.
        eval_episodes: evaluation episodes per split (games x runs; whole splits: their mean size x runs).
        eval_splits: evaluation splits.
        judge_episodes: episodes the judge votes on per split (None: all).
        oracle_episodes: planner-labelled episodes per split (the probe set, labelled once per seed worker).
        judge_every: the judge-only evaluation period in iterations (0: none).
        warm_start: whether a warm start is made.
        cores: CPU cores (seeds beyond them share cores).
        update_passes: passes over an iteration's rows (the larger of ``optim.policy_epochs`` and
            ``optim.judge_epochs``): a trained-on step's update work is paid once per pass.
        reused_seeds: how many of the first seeds find some of their runs finished in ``reuse_from`` (a profile run
            after the default: ``budget.reused_seeds``).
        reused_arms: which runs those seeds reuse (``"before"`` and arm names; ``budget.reused_arms``).
    """

    seeds: int
    jobs: int
    arms: tuple[str, ...]
    iterations: int
    episodes_per_iteration: int
    rewrite_episodes: int
    max_steps: int
    eval_max_steps: int
    eval_episodes: int
    eval_splits: int = 2
    judge_episodes: int | None = None
    oracle_episodes: int = 4
    judge_every: int = 0
    warm_start: bool = True
    cores: int = 2
    update_passes: int = 1
    reused_seeds: int = 0
    reused_arms: tuple[str, ...] = ()


@functools.cache
def arm_traits(arm: str) -> tuple[bool, bool, bool]:
    """``(judge votes, judge trains, environment adapts)`` of the shipped arm ``conf/arm/<arm>.yaml``.

    Read from the arm's own config, so that a new arm is costed as what it runs (the experiment arms' judges were
    once costed as none). An arm that is not shipped is costed as judged, trained and adapting: an estimate errs high.
    """
    path = Path(CONF_DIR) / "arm" / f"{arm}.yaml"
    if not path.is_file():
        return True, True, True
    node = OmegaConf.load(path).arm
    # expert-label votes (``judge_votes: expert``, E3) are costed as a judge's: an upper bound
    return bool(node.use_judge), bool(node.train_judge), bool(node.adapt_environment)


def _probe_steps(plan: AblationPlan, c: StepCosts) -> float:
    """Planner-labelled steps of the probe set, all splits."""
    voted = plan.eval_episodes if plan.judge_episodes is None else min(plan.judge_episodes, plan.eval_episodes)
    return plan.eval_splits * min(plan.oracle_episodes, voted) * c.episode_steps(plan.eval_max_steps)


def _evaluation(plan: AblationPlan, c: StepCosts, *, judged: bool) -> float:
    steps = c.episode_steps(plan.eval_max_steps)
    per_split = plan.eval_episodes * steps * (c.policy_s + c.engine_s)
    if judged:
        voted = plan.eval_episodes if plan.judge_episodes is None else min(plan.judge_episodes, plan.eval_episodes)
        per_split += voted * steps * c.judge_s
    return plan.eval_splits * per_split + (_probe_steps(plan, c) * c.judge_s if judged else 0.0)


def estimate_seconds(plan: AblationPlan, costs: StepCosts | None = None) -> dict[str, float]:
    """The estimated wall-clock seconds of an ablation, by part.

    Args:
        plan: what the config runs.
        costs: per-step costs (default :class:`StepCosts`).

    Returns:
        ``warm_start``, ``evaluation`` (per seed: "before" and every arm's final evaluation), ``training`` (per
        seed), ``judge_probes`` (per seed), ``overhead`` (per seed) and ``total`` (the warm start plus the seeds'
        work spread over ``min(jobs, cores, seeds)`` parallel workers; the first ``reused_seeds`` seeds skip their
        ``reused_arms``; the runs, "before" and each arm of each seed, are what the workers share out, so the work is
        divided evenly up to the last run). The per-seed parts are those of a seed that runs everything.

    Raises:
        ValueError: a non-positive count.
    """
    c = costs or StepCosts()
    counts = (
        plan.seeds,
        plan.jobs,
        plan.cores,
        plan.iterations,
        plan.eval_episodes,
        plan.max_steps,
        plan.eval_max_steps,
        plan.update_passes,
    )
    if min(counts) < 1:
        raise ValueError(f"plan: expected positive counts, got {plan}")
    fresh = _seed_parts(plan, c, plan.arms, before=True)
    reused = min(plan.reused_seeds, plan.seeds)
    left = tuple(a for a in plan.arms if a not in plan.reused_arms)
    partial = _seed_parts(plan, c, left, before="before" not in plan.reused_arms)
    warm = c.warm_start_s if plan.warm_start else 0.0
    work = (plan.seeds - reused) * sum(fresh.values()) + reused * sum(partial.values())
    runs = plan.seeds * (len(plan.arms) + 1)  # the unit of work a worker takes (workers.RunJob)
    return {"warm_start": warm, **fresh, "total": warm + work / min(plan.jobs, plan.cores, runs)}


def arm_seconds(plan: AblationPlan, arm: str, costs: StepCosts | None = None) -> float:
    """The estimated seconds of one seed's run of ``arm`` (its training, final evaluation, judge probes, overhead)."""
    return sum(_seed_parts(plan, costs or StepCosts(), (arm,), before=False).values())


def _seed_parts(plan: AblationPlan, c: StepCosts, arms: tuple[str, ...], *, before: bool) -> dict[str, float]:
    """One seed's ``evaluation``, ``training``, ``judge_probes`` and ``overhead`` seconds for ``arms``."""
    # "before" evaluates the starting judge too, and labels the probe set
    evaluation = _evaluation(plan, c, judged=True) + _probe_steps(plan, c) * c.planner_s if before else 0.0
    training = probes = 0.0
    train_steps = c.episode_steps(plan.max_steps)
    for arm in arms:
        judged, judge_trained, adapts = arm_traits(arm)
        evaluation += _evaluation(plan, c, judged=judged)
        episodes = plan.episodes_per_iteration + (plan.rewrite_episodes if adapts else 0)
        per_step = c.policy_s + c.engine_s + c.update_s * plan.update_passes + (c.judge_s if judged else 0.0)
        training += plan.iterations * (episodes * train_steps * per_step + c.iteration_s)
        if judge_trained and plan.judge_every:
            count = (plan.iterations - 1) // plan.judge_every  # the last iteration has the full evaluation
            probes += count * _probe_steps(plan, c) * c.judge_s
    overhead = (len(arms) + int(before)) * c.run_overhead_s
    return {"evaluation": evaluation, "training": training, "judge_probes": probes, "overhead": overhead}


def plan_from_config(cfg: Any, cores: int) -> tuple[AblationPlan, StepCosts]:
    """The plan and the costs (``cfg.budget``) of an ablation config (an ``ablate.yaml`` composition)."""
    judge_episodes = cfg.eval.get("judge_episodes")
    budget = cfg.get("budget") or {}
    plan = AblationPlan(
        seeds=len(cfg.seeds),
        jobs=int(cfg.jobs),
        arms=tuple(str(a) for a in cfg.arms),
        iterations=int(cfg.iterations),
        episodes_per_iteration=int(cfg.tasks_per_iteration) * int(cfg.group_size),
        rewrite_episodes=int(cfg.max_rewrites_per_iteration) * int(cfg.group_size),
        max_steps=int(cfg.setting.get("max_steps", 20)),
        eval_max_steps=int(cfg.setting.get("eval_max_steps", 30)),
        eval_episodes=_eval_games(cfg) * int(cfg.eval.runs),
        eval_splits=len(cfg.setting.get("eval_splits", None) or cfg.setting.get("eval_quest_lengths", None) or [0]),
        judge_episodes=None if judge_episodes is None else int(judge_episodes),
        oracle_episodes=int(cfg.eval.oracle_episodes),
        judge_every=int(cfg.eval.get("judge_every", 0)),
        warm_start=bool(cfg.warm_start.enabled) and cfg.setting.name == "alfworld",
        cores=max(1, cores),
        update_passes=max(int(cfg.optim.get("policy_epochs", 1)), int(cfg.optim.get("judge_epochs", 1))),
        reused_seeds=int(budget.get("reused_seeds", 0)) if cfg.get("reuse_from") else 0,
        reused_arms=tuple(str(a) for a in budget.get("reused_arms", ())),
    )
    known = {f.name for f in fields(StepCosts)}
    base = measured_costs(str(cfg.model.get("name", "")))
    costs = replace(base, **{k: float(v) for k, v in budget.items() if k in known})
    return plan, costs


def measured_costs(model: str, path: Path = RATES_FILE) -> StepCosts:
    """:class:`StepCosts` with the rates measured on ``model`` in ``path`` (the defaults where none were measured).

    Args:
        model: the config's ``model.name``; rates measured on another model are not used.
        path: the rates file (``{"measured": {"model": ...}, "rates": {field: seconds}}``).
    """
    if not path.is_file():
        return StepCosts()
    data = json.loads(path.read_text())
    if data.get("measured", {}).get("model") != model:
        return StepCosts()
    known = {f.name for f in fields(StepCosts)}
    return StepCosts(**{k: float(v) for k, v in data.get("rates", {}).items() if k in known})


CALIBRATION = (
    "calibrated on an idle 2-core x86 CPU machine, one run per core (StepCosts: the encoder policy at CPU scale, "
    "the rates python -m benchmarks.bench_iteration measured); a loaded or different machine takes longer"
)
"""The machine class the per-step costs were measured on (printed with every estimate)."""


def load_factor(cores: int, load: float | None = None) -> float:
    """How many times longer than the estimate a run should take on this machine now.

    That is its 1-minute load average over its cores when that exceeds 1 (other processes share the cores), else 1.

    Raises:
        ValueError: ``cores`` < 1 or a negative ``load``.
    """
    if cores < 1:
        raise ValueError(f"cores: expected >= 1, got {cores}")
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load < 0:
        raise ValueError(f"load: expected >= 0, got {load}")
    return max(1.0, load / cores)


def calibration_note(cores: int, load: float | None = None) -> str:
    """What the estimate is calibrated on and, on a loaded machine, the factor to expect."""
    factor = load_factor(cores, load)
    if factor <= 1.2:
        return CALIBRATION
    loaded = f"this machine is loaded now (load {factor * cores:.1f} on {cores} cores)"
    return f"{CALIBRATION}; {loaded}: expect about {factor:.1f}x"


def _eval_games(cfg: Any) -> int:
    """Games per evaluation split: ``eval.games``, or (null, ALFWorld) the mean size of the whole splits."""
    if cfg.eval.games is not None:
        return int(cfg.eval.games)
    if cfg.setting.name != "alfworld":
        raise ValueError(f"eval.games: null (whole splits) is estimated for alfworld only, not {cfg.setting.name}")
    root = resolve_data_root(cfg.setting.data_root)
    types = tuple(cfg.setting.task_types)
    sizes = [len(list_games(split, root, task_types=types)) for split in cfg.setting.eval_splits.values()]
    return max(1, round(sum(sizes) / len(sizes)))


def main(argv: list[str]) -> None:
    """Print the estimate of ``rlanything ablate <argv>`` (minutes by part) without running anything."""
    if any(a in ("-h", "--help") for a in argv):
        print(
            "usage: python -m rlanything_core.ablation.budget [HYDRA OVERRIDES of rlanything ablate...]\n"
            "  e.g. +profile=full, or iterations=36 seeds=[0,1,2]; prints the estimated minutes by part\n\n"
            + (__doc__ or "")
        )
        return
    setting = [] if any(a.lstrip("+").startswith("setting=") for a in argv) else ["+setting=alfworld"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("ablate", overrides=[*setting, *argv])
    parts = estimate_seconds(*plan_from_config(cfg, os.cpu_count() or 1))
    shown = " ".join(f"{k}={v / 60:.1f}" for k, v in parts.items())
    print(f"{shown} budget={float(cfg.budget.minutes):g} (minutes; evaluation, training, probes, overhead per seed)")
    print(calibration_note(os.cpu_count() or 1))


if __name__ == "__main__":
    main(sys.argv[1:])
