"""Does the encoder judge's input carry the process? Today's input beside the state-summary one, on the same steps.

The steps are rollouts of the warm-start policy on the ALFWorld training split (the run's own collector, built by
``build_run`` from a committed ``policy_judge`` run's config, with a larger pool), each labelled exactly by ALFWorld's
hand-coded expert: does the action equal the expert's next command from that state
(``envs/alfworld/expert_agreement.py``; states the expert gives up on are left out of the scores). The pool's games
are split in two by a seeded draw stratified by task type (game level: no game is on both sides):

- the **fit** half is played as the arm's iterations are (``tasks_per_iteration`` tasks x ``group_size`` rollouts);
- the **scored** half is played ``--scored-rollouts`` times per game; every figure is on its steps.

Each judge input (``collect.state_text``: ``ActionResultText``, the default, and ``StateSummaryText``) is measured as

- **untrained**: the run's judge as the loop starts it (seed ``seed + 1000``; a random head: its AUC's distance from
  1/2, either way, is what the frozen features order by chance);
- **consistency-trained**: the same judge trained by the loop's own consistency feedback on the fit half's rollouts,
  through the run's own objects (its vote sampler, ``build_iteration``'s judge targets with the arm's band and
  balanced outcomes, ``judge_update``: the arm's loss, optimizer, lr, updates per iteration and epochs). One judge
  update per fit batch, fresh votes every pass (as each iteration of a run does): ``--checkpoints`` names after how
  many such updates it is scored (12 and 36: a 12- and a 36-iteration run's number of judge updates). The policy is
  not trained: the rollouts are fixed, the judge is the only thing that changes;
- **probe head**: a class-balanced logistic head on the judge's frozen features fitted on the fit half's expert
  labels: what the head could learn if its feedback named the process exactly (a ceiling, not a run's judge).

Figures (``rlanything_core.analysis.judge_steps``): the ROC AUC of ``P(+1)`` and the balanced accuracy of
``P(+1) > 1/2`` (the majority of many votes), per task type, over clean/cool/heat and over all, each with a 95%
bootstrap interval over games (stratified by task type), and the paired difference state summary - today's input on
the same resamples.

    python -m scripts.judge_input_study --out experiments/results/alfworld/judge_input --policy-init PT
"""

from __future__ import annotations

import argparse
import csv
import pickle
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from rlanything_core.analysis.judge_steps import game_resample_weights, judge_intervals
from rlanything_core.assembly import build_run
from rlanything_core.envs.alfworld.expert_agreement import AlfworldExpertLabeller
from rlanything_core.files import atomic_write_bytes, atomic_write_text
from rlanything_core.loop.protocol import Rollouts
from rlanything_core.seeding import derive_seed

DEFAULT_RUN = Path("experiments/results/alfworld/full/runs/policy_judge_seed0")
INPUTS: dict[str, dict[str, Any]] = {
    "action_result": {"_target_": "rlanything_core.collect.state_text.ActionResultText", "previous_actions": 3},
    "state_summary": {"_target_": "rlanything_core.collect.state_text.StateSummaryText", "recent_actions": 4},
}
BASELINE = "action_result"
KITCHEN = ("pick_clean_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_heat_then_place_in_recep")


def study_config(args: argparse.Namespace, name: str, step_text: dict[str, Any]) -> DictConfig:
    """The committed run's resolved config with a ``--pool``-game training pool, the judge reading ``step_text``."""
    cfg = OmegaConf.load(Path(args.run) / "config.yaml")
    if not isinstance(cfg, DictConfig):
        raise SystemExit(f"--run: {args.run}/config.yaml is not a mapping")
    if not bool(cfg.arm.train_judge):
        raise SystemExit(f"--run: {args.run} trains no judge (arm {cfg.arm.name!r}); give a policy_judge run")
    cfg.run_dir = str(Path(args.work) / name)
    cfg.resume = False
    cfg.progress = False
    cfg.step_records = False
    cfg.model.policy_init = None if args.policy_init == "none" else str(args.policy_init)  # none: a smoke test
    cfg.setting.train_games = args.pool
    cfg.setting.parts.environment.train_games = args.pool  # the config is resolved: the key the builder reads
    cfg.setting.env_workers = 1
    cfg.model.judge.cache_size = 16384  # every step's frozen bottom stays cached over the passes
    cfg.votes.encoder.step_text = dict(step_text)
    return OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(args.set)))  # type: ignore[return-value]


def split_games(types: dict[str, str], seed: int, per_type: int | None) -> tuple[list[str], list[str]]:
    """``(fit, scored)`` game ids, a seeded draw within each task type (game level: no game on both sides).

    ``per_type`` games of each type are fitted on (``None``: half, an odd one to fit); the rest are scored.
    """
    fit: list[str] = []
    scored: list[str] = []
    rng = random.Random(seed)
    for t in sorted(set(types.values())):
        games = sorted(g for g, k in types.items() if k == t)
        rng.shuffle(games)
        cut = (len(games) + 1) // 2 if per_type is None else min(per_type, len(games) - 1)
        fit += games[:cut]
        scored += games[cut:]
    rng.shuffle(fit)  # a fit batch mixes the types, as a run's draws from the pool do
    return fit, scored


def play(args: argparse.Namespace) -> dict[str, Any]:
    """The fit batches and the scored episodes, played by the warm-start policy and expert-labelled (cached)."""
    cache = Path(args.work) / "rollouts.pkl"
    if cache.is_file():
        with cache.open("rb") as fh:
            data: dict[str, Any] = pickle.load(fh)  # this study's own file, written below
        print(f"rollouts: reused {cache}", flush=True)
        return data
    started = time.perf_counter()
    cfg = study_config(args, "collect", INPUTS[BASELINE])
    loop = build_run(cfg).loop
    source = loop.driver
    loop.setup()
    labeller = AlfworldExpertLabeller()
    tasks = {t.task_id: t for t in source.pool.active_tasks()}
    types = {g: labeller.task_type(source.to_env_task(t)) for g, t in tasks.items()}
    fit, scored = split_games(types, args.split_seed, args.fit_per_type)
    collector = source.collector
    tpi, seed = int(cfg.tasks_per_iteration), int(cfg.seed)

    def rollouts(games: Sequence[str], group_size: int, key: str) -> list[Any]:
        collector.group_size = group_size
        with loop.rollout_mode(), torch.no_grad():
            episodes, _ = collector.collect([source.to_env_task(tasks[g]) for g in games],
                                            seed=derive_seed(seed, "judge_input_study", key),
                                            task_ids=list(games), group_ids=list(range(len(games))))  # fmt: skip
        return list(episodes)

    batches = [rollouts(fit[k : k + tpi], int(cfg.group_size), f"fit{k}") for k in range(0, len(fit), tpi)]
    held = [e for k in range(0, len(scored), 8) for e in rollouts(scored[k : k + 8], args.scored_rollouts, f"s{k}")]
    source.pool.close()
    played = time.perf_counter() - started
    every = [e for b in batches for e in b] + held
    refs = labeller.reference_actions([(source.to_env_task(tasks[e.task_id]), [s.action for s in e.steps])
                                       for e in every])  # fmt: skip
    n_fit = len(every) - len(held)
    labelled = time.perf_counter() - started - played
    data = {"batches": batches, "scored": held, "types": types, "fit": fit, "fit_refs": refs[:n_fit],
            "scored_refs": refs[n_fit:], "seconds": {"rollouts": played, "labels": labelled}}  # fmt: skip
    atomic_write_bytes(cache, pickle.dumps(data))
    print(f"rollouts: {len(every)} episodes ({len(held)} scored) in {played:.0f} s", flush=True)
    return data


def step_probabilities(source: Any, episodes: Sequence[Any], seed: int) -> torch.Tensor:
    """``P(+1)`` of every step (episodes in order), from the run's own judge collector (one vote records it)."""
    judged, _ = source.judge_collector.judge(list(episodes), seed=seed)
    out = []
    for e in judged:
        for s in e.steps:
            v = s.judge[0]
            p = float(torch.tensor(v.logprobs[0]).exp())
            out.append(p if v.vote > 0 else 1.0 - p)
    return torch.tensor(out, dtype=torch.float64)


def train_judge(args: argparse.Namespace, name: str, data: dict[str, Any]) -> dict[str, torch.Tensor]:
    """``{stage: P(+1) of the scored steps}`` of one input's judge: untrained, then after each checkpoint's updates."""
    cfg = study_config(args, name, INPUTS[name])
    loop = build_run(cfg).loop
    source = loop.driver
    loop.setup()
    probe_seed = derive_seed(int(cfg.seed), "judge_input_study", "scored")
    with loop.rollout_mode(), torch.no_grad():
        out = {"untrained": step_probabilities(source, data["scored"], probe_seed)}
    if args.probe_head:
        out["probe_head"] = probe_head(loop.judge, source, data)
    if loop.judge_update is None:
        raise SystemExit(f"--run: {args.run} builds no judge update")
    update = loop.judge_update
    started, it, optimizer_steps = time.perf_counter(), 0, 0
    while it < max(args.checkpoints):
        for batch in data["batches"]:
            with loop.rollout_mode():
                rows = source.rows(source.judge(Rollouts(it, batch))).judge  # fresh votes: the iteration's seed
            optimizer_steps += int(update(rows).get("judge/updates", 0.0))  # 0 when no group is in the band
            it += 1
            if it in args.checkpoints:
                with loop.rollout_mode(), torch.no_grad():
                    out[f"consistency_{it}"] = step_probabilities(source, data["scored"], probe_seed)
                print(f"{name}: {it} judge updates ({optimizer_steps} optimizer steps) in "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
            if it >= max(args.checkpoints):
                break
    source.pool.close()
    return out


def probe_head(judge: Any, source: Any, data: dict[str, Any], *, l2: float = 1e-1) -> torch.Tensor:
    """P(+1) of the scored steps under a class-balanced logistic head on the judge's encoder features.

    Fitted on the fit half's expert-labelled steps (standardized features, L2 ``l2``, L-BFGS).
    """
    votes = source.judge_collector.votes

    def features(episodes: Sequence[Any]) -> torch.Tensor:
        ids = [judge.text_ids(votes.render_step(e, s)[-1]["content"]) for e in episodes for s in e.steps]
        with torch.no_grad():
            return torch.cat([judge.encoder(ids[i : i + 64]) for i in range(0, len(ids), 64)]).double()

    fit_eps = [e for b in data["batches"] for e in b]
    fit_labels = [a == r for e, refs in zip(fit_eps, data["fit_refs"]) for a, r in
                  zip((s.action for s in e.steps), refs) if r is not None]  # fmt: skip
    keep = torch.tensor([r is not None for refs in data["fit_refs"] for r in refs])
    x_fit, x_all = features(fit_eps)[keep], features(data["scored"])
    y = torch.tensor(fit_labels, dtype=torch.float64)
    mu, sd = x_fit.mean(0), x_fit.std(0) + 1e-6
    x_fit, x_all = (x_fit - mu) / sd, (x_all - mu) / sd
    w = torch.zeros(x_fit.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    pos = float(y.mean())
    weight = torch.where(y > 0, 0.5 / max(pos, 1e-6), 0.5 / max(1 - pos, 1e-6))
    opt = torch.optim.LBFGS([w, b], max_iter=300, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        logit = x_fit @ w + b
        loss = (weight * torch.nn.functional.binary_cross_entropy_with_logits(logit, y, reduction="none")).mean()
        loss = loss + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return torch.sigmoid(x_all @ w + b)


def main(argv: Sequence[str] | None = None) -> None:
    """Play and label the steps (or reuse them), train and score both judges, write the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where the csv files and commands.md go")
    parser.add_argument("--work", default=None, help="rollouts cache and run folders (default: <out>/.work)")
    parser.add_argument("--policy-init", required=True,
                        help="the warm start (python -m rlanything_core.ablation.warm_start_encoder)")
    parser.add_argument("--run", default=str(DEFAULT_RUN), help="a committed policy_judge run (its config.yaml)")
    parser.add_argument("--pool", type=int, default=96, help="valid_train games, task types in proportion")
    parser.add_argument("--scored-rollouts", type=int, default=1, help="rollouts per scored game")
    parser.add_argument("--checkpoints", type=int, nargs="+", default=[12, 36], help="judge updates to score after")
    parser.add_argument("--fit-per-type", type=int, default=None,
                        help="games of each task type the judges are trained on (default: half); the rest are scored")
    parser.add_argument("--split-seed", type=int, default=0, help="which half of each type's games is fitted on")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change the run's resolved config (e.g. a short smoke: setting.max_steps=4)")
    parser.add_argument("--no-probe-head", dest="probe_head", action="store_false")
    parser.add_argument("--bootstrap", type=int, default=2000, help="game-level resamples")
    args = parser.parse_args(argv)
    out = Path(args.out)
    args.work = args.work or str(out / ".work")
    started = time.perf_counter()
    data = play(args)
    scored = data["scored"]
    refs = data["scored_refs"]
    keep = torch.tensor([r is not None for rs in refs for r in rs])
    stages: dict[str, dict[str, torch.Tensor]] = {}
    for name in INPUTS:
        for stage, p in train_judge(args, name, data).items():
            stages.setdefault(stage, {})[name] = p[keep]
    rows = [(e, t, s, r) for e, rs in zip(scored, refs) for t, (s, r) in enumerate(zip(e.steps, rs)) if r is not None]
    y = torch.tensor([s.action == r for _, _, s, r in rows])
    games = [e.task_id for e, _, _, _ in rows]
    types = [data["types"][g] for g in games]
    groups = {"all": torch.ones(len(rows), dtype=torch.bool),
              "clean/cool/heat": torch.tensor([t in KITCHEN for t in types])}  # fmt: skip
    groups.update({t: torch.tensor([x == t for x in types]) for t in sorted(set(types))})
    weights = game_resample_weights(games, types, samples=args.bootstrap, generator=torch.Generator().manual_seed(0))
    table = [{"stage": stage, **vars(r)} for stage, scores in stages.items()
             for r in judge_intervals(scores, y, games, groups, weights=weights, baseline=BASELINE)]  # fmt: skip
    lines = [",".join(table[0])] + [",".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values())
                                    for r in table]  # fmt: skip
    atomic_write_text(out / "judge_input.csv", "\n".join(lines) + "\n")
    with (out / "steps.csv").open("w", newline="") as fh:  # the scored steps (no text) and every judge's P(+1)
        w = csv.writer(fh)
        names = [f"{n}/{stage}" for stage, scores in stages.items() for n in scores]
        w.writerow(["game", "task_type", "step", "action", "expert_action", "won", *names])
        for i, (e, t, s, r) in enumerate(rows):
            w.writerow([e.task_id, types[i], t, s.action, r, int(e.won),
                        *(f"{float(p[i]):.4f}" for scores in stages.values() for p in scores.values())])  # fmt: skip
    fit_steps = sum(len(e.steps) for b in data["batches"] for e in b)
    print(f"{len(rows)} scored steps ({int(y.sum())} the expert's) of {len(set(games))} games; fit: "
          f"{len(data['fit'])} games, {fit_steps} steps; rollouts {data['seconds']['rollouts']:.0f} s, "
          f"total {time.perf_counter() - started:.0f} s")  # fmt: skip
    for r in table:
        if r["group"] in ("all", "clean/cool/heat"):
            print(f"{r['stage']:15s} {r['judge']:32s} {r['group']:16s} {r['metric']:4s} n={r['steps']:5d} "
                  f"{r['value']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]")


if __name__ == "__main__":
    main()
