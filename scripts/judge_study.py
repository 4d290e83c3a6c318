"""Can the encoder judge learn the process at all? The judge trained on fixed rollouts, by two targets.

The ablation's judge gains no balanced process accuracy in 12 iterations (``docs/results.md``). Two causes are told
apart here, on identical data:

- **the ceiling**: the judge trained through the same loss and update, but with the planner's label of each step
  (``+1`` progress, ``-1`` otherwise) as its consistency target's ``R`` instead of ``O + lam * mean(votes)``: what
  this judge (its encoder, head, step text, optimizer) can learn when its feedback names the process exactly;
- **the signal**: the method's consistency feedback (arXiv 2602.02488, Sec. 3: each vote earns ``R * vote``,
  standardized over the ``m`` votes), as the run trains it.

Everything is the run's own, built from a committed run's ``config.yaml`` by ``build_run``: the warm-start policy
plays the rollouts, the judge model, its vote sampler, targets, band, optimizer and update train the judge. Only two
things differ from a run: the rollouts are fixed (collected once by the warm-start policy and labelled once by the
planner), and the policy is not trained, so the judge is the only thing that changes. Each epoch re-judges every
training batch with the current judge (fresh vote seeds) and makes one judge update per batch, as an iteration does.

The training pool's games are split in two by a seeded draw: the judge trains on the rollouts of one half and is
measured on the other half's (``held_out``), and on the ablation's committed probe set (``eval.probe_file``: the
evaluation splits' planner-labelled steps). Measures: the balanced accuracy of the majority of ``m`` seeded votes (the
ablation's ``judge_process_bacc``) and the ROC AUC of ``P(+1)`` (threshold-free: it shows a judge that ranks progress
steps higher even while its votes drift to one class), with 95% intervals from a bootstrap over episodes.

    python -m scripts.judge_study collect --out DIR --policy-init PT [--run RUN_DIR] [--iterations 16]
    python -m scripts.judge_study train --out DIR --targets consistency|planner [--epochs 6]
        [--set optim.judge_optimizer.lr=3e-4 --tag lr3e-4]
    python -m scripts.judge_study probe --out DIR [--episodes 16 --game-deadline 60]
    python -m scripts.judge_study score --out DIR --checkpoints RUN/checkpoints/last.ckpt ... [--probe FILE]
    python -m scripts.judge_study report --out DIR
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torchmetrics.functional.classification import binary_auroc
from tqdm.auto import tqdm

from rlanything_core.assembly import build_run
from rlanything_core.collect.scorer_selection import EncoderVotes
from rlanything_core.files import atomic_write_json, atomic_write_text, read_json
from rlanything_core.loop.iteration import JudgeTargets, build_rows
from rlanything_core.loop.judge_probe import (
    JudgeProbe,
    balanced_accuracy,
    load_probes,
    save_probes,
    step_majority_votes,
)
from rlanything_core.loop.oracle_labels import label_within_deadline
from rlanything_core.loop.protocol import Rollouts
from rlanything_core.records import JudgeSample
from rlanything_core.rewards.consistency import consistency_targets, standardize_votes
from rlanything_core.rewards.targets import batch_votes
from rlanything_core.seeding import derive_seed
from rlanything_core.types import RolloutBatch

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RUN = REPO / "experiments/results/alfworld/full/runs/policy_judge_seed0"
DEFAULT_PROBE = REPO / "experiments/results/alfworld/full/init/judge_probe_policy_seed0.json"
ROLLOUTS = "rollouts.json"
BOOTSTRAP = 2000
_MISSING = object()


# ------------------------------------------------------------------------------------------------ the run's objects
def study_config(run: Path, out: Path, name: str, policy_init: str | None, overrides: Sequence[str] = ()) -> DictConfig:
    """The committed run's config, writing to ``out/name``, without resume, evaluating on the committed probe set.

    ``overrides`` (``KEY=VALUE``, OmegaConf dotlist) change the run's resolved config, e.g. the judge's learning rate
    ``optim.judge_optimizer.lr=3e-4`` (the config is resolved: set the key that is used, not the one it came from).
    """
    source = run / "config.yaml"
    if not source.is_file():
        raise SystemExit(f"--run: no config.yaml in {run} (give a committed ablation run with a judge)")
    cfg = OmegaConf.load(source)
    if not bool(cfg.arm.use_judge):
        raise SystemExit(f"--run: {run} trains no judge (arm {cfg.arm.name!r}); give a policy_judge or full run")
    for item in overrides:
        key = item.split("=", 1)[0]
        if "=" not in item or OmegaConf.select(cfg, key, default=_MISSING) is _MISSING:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE with a key of {source}")
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
    cfg.run_dir = str(out / name)
    cfg.resume = False
    cfg.progress = False
    cfg.eval.probe_file = str(DEFAULT_PROBE)
    if policy_init is not None:
        cfg.model.policy_init = str(policy_init)
    if not Path(str(cfg.model.policy_init)).is_file():
        raise SystemExit(
            f"--policy-init: the warm-start policy {cfg.model.policy_init} is not here; `rlanything ablate "
            "+setting=alfworld +profile=full` writes it (init/policy_seed0.pt), or pass its path"
        )
    return cfg


def held_out_games(task_ids: Sequence[str], seed: int) -> set[str]:
    """A seeded half of the pool's games, on which the judge is measured and never trained."""
    games = sorted(set(task_ids))
    return set(random.Random(seed).sample(games, len(games) // 2))


# ------------------------------------------------------------------------------------------------ collect
def collect(args: argparse.Namespace) -> None:
    """Play ``iterations`` training batches with the warm-start policy; label every step with the planner.

    The planner is slow on some games (tens of seconds a state in large kitchens), so each game's episodes are labelled
    in a process of their own (they share its plan cache), ``--workers`` at a time, and a game that takes longer than
    ``--game-deadline`` seconds is left out of the study (counted in ``rollouts.json``'s settings), never guessed.
    """
    out = Path(args.out)
    cfg = study_config(Path(args.run), out, "collect", args.policy_init)
    run = build_run(cfg)
    loop, source = run.loop, run.loop.driver
    loop.setup()
    played: list[tuple[int, list[Any]]] = []
    env_task: dict[str, Any] = {}
    for it in tqdm(range(args.iterations), desc="rollouts"):
        env_task.update({t.task_id: source.to_env_task(t) for t in source.tasks_for(it)})
        with loop.rollout_mode():
            played.append((it, source.collect(it).episodes))
    by_game: dict[str, list[list[str]]] = {}
    for _, episodes in played:
        for e in episodes:
            by_game.setdefault(e.task_id, []).append([s.action for s in e.steps])
    labels = label_within_deadline(loop.evaluator.oracle, {g: (env_task[g], acts) for g, acts in by_game.items()},
                                   deadline_s=args.game_deadline, workers=args.workers, progress=True)  # fmt: skip
    batches, position = [], {g: 0 for g in labels}
    for it, episodes in played:
        kept, kept_labels = [], []
        for e in episodes:
            if e.task_id in labels:
                kept.append(e)
                kept_labels.append(labels[e.task_id][position[e.task_id]])
                position[e.task_id] += 1
        if kept:
            batches.append(JudgeProbe(f"iteration_{it}", kept, kept_labels))
    dropped = sorted(set(by_game) - set(labels))
    settings = {"run": str(args.run), "policy_init": str(cfg.model.policy_init), "iterations": args.iterations,
                "game_deadline_s": args.game_deadline, "games": len(by_game),
                "games_over_deadline": dropped}  # fmt: skip
    save_probes(out / ROLLOUTS, batches, settings)
    print(
        f"labelled {len(labels)} of {len(by_game)} games ({len(dropped)} over {args.game_deadline} s): "
        f"{sum(len(b.episodes) for b in batches)} episodes, {sum(len(y) for b in batches for y in b.labels)} steps"
    )


# ------------------------------------------------------------------------------------------------ train
def planner_targets(batch: RolloutBatch, labels: Sequence[Sequence[int]]) -> torch.Tensor:
    """The consistency targets with the planner's labels as ``R``, each class weighing half of the batch's steps.

    The same maths as the method's targets (``R * vote`` standardized over the ``m`` votes), with ``R`` the step's
    label; progress steps are rare (10-15%), so they are weighted to half the total, as the balanced targets weigh won
    and failed episodes: otherwise this ceiling would also learn the class balance.
    """
    steps = batch.steps
    votes, vote_mask, vote_valid = batch_votes(steps)
    grid = torch.zeros(steps.step_mask.shape, dtype=votes.dtype)
    for b, row in enumerate(labels):
        if int(steps.step_mask[b].sum()) != len(row):
            raise ValueError(f"labels: rollout {b} has {int(steps.step_mask[b].sum())} steps but {len(row)} labels")
        grid[b, : len(row)] = torch.tensor(row, dtype=votes.dtype)
    standardized = standardize_votes(consistency_targets(grid, votes, vote_mask, vote_valid), vote_mask)
    n, n_pos = float(steps.step_mask.sum()), float(((grid > 0) & steps.step_mask).sum())
    weights = torch.where(grid > 0, n / (2 * max(n_pos, 1.0)), n / (2 * max(n - n_pos, 1.0)))
    return standardized * weights.unsqueeze(-1)


def judge_rows(source: Any, rollouts: Rollouts, labels: Sequence[Sequence[int]], targets: str) -> Any:
    """The judge's rows of one batch: the run's own (``consistency``) or with the planner's ``R`` (``planner``)."""
    if targets == "consistency":
        return source.rows(rollouts).judge
    votes = source.judge_collector.num_votes
    batch = RolloutBatch.from_episodes(rollouts.episodes, pad_id=source.pad_id, num_votes=votes)
    keep = torch.ones(batch.steps.num_rollouts, dtype=torch.bool)  # every group: the labels need no outcome spread
    judge = JudgeTargets(planner_targets(batch, labels), keep)
    rows = build_rows(batch, iteration=rollouts.iteration, integrator=source.integrator,
                      step_reward=source.step_reward(batch.steps), judge=judge)  # fmt: skip
    return rows.judge


def train(args: argparse.Namespace) -> None:
    """Train a fresh judge on the fixed rollouts with ``--targets``; measure it after every epoch."""
    out = Path(args.out)
    variant = args.targets + (f"_{args.tag}" if args.tag else "")
    cfg = study_config(Path(args.run), out, variant, args.policy_init, args.set)
    run = build_run(cfg)
    loop, source = run.loop, run.loop.driver
    loop.setup()
    train_batches, probes = study_sets(out, args.seed)
    rows_out: list[dict[str, Any]] = []
    scores_path = out / f"scores_{variant}.csv"
    for epoch in range(args.epochs + 1):
        if epoch:  # epoch 0 measures the untrained judge
            for k, batch in enumerate(train_batches):
                it = (epoch - 1) * len(train_batches) + k  # fresh vote seeds every epoch
                with loop.rollout_mode():
                    judged = source.judge(Rollouts(it, batch.episodes))
                    rows = judge_rows(source, judged, batch.labels, args.targets)
                loop.judge_update(rows)
        with loop.rollout_mode(), torch.no_grad():
            for name, probe in probes.items():
                rows_out.append({"targets": variant, "epoch": epoch, "set": name, **measure(source, probe, cfg)})
        write_csv(scores_path, rows_out)
        print(
            f"epoch {epoch}: "
            + "  ".join(f"{r['set']} bacc={r['bacc']:.3f} auc={r['auc']:.3f}" for r in rows_out if r["epoch"] == epoch),
            flush=True,
        )


def study_sets(
    out: Path, seed: int, probe_file: Path = DEFAULT_PROBE
) -> tuple[list[JudgeProbe], dict[str, JudgeProbe]]:
    """The training batches, and the labelled sets a judge is measured on: the held-out games' and a probe file's.

    The committed probe's sets are named by their split; another file's ``<split> (<file stem>)``.
    """
    rollouts = load_probes(out / ROLLOUTS)
    held = held_out_games([e.task_id for p in rollouts.values() for e in p.episodes], seed)
    train_batches, held_probe = split_batches(rollouts.values(), held)
    probes = load_probes(probe_file)
    if Path(probe_file) != DEFAULT_PROBE:
        probes = {f"{split} ({Path(probe_file).stem})": p for split, p in probes.items()}
    return train_batches, {"held_out": held_probe, **probes}


def probe(args: argparse.Namespace) -> None:
    """A bigger probe set: the evaluation's first ``--episodes`` episodes per split, planner-labelled in time.

    Played like the ablation's probe (the run's evaluation settings and seed, the warm-start policy), but with more
    episodes; each is labelled in its own process within ``--game-deadline`` seconds, slower ones left out and named
    (``+eval.oracle_deadline_s``). Written to ``<out>/probe_<episodes>.json``; ``score --probe`` measures judges on it.
    """
    out = Path(args.out)
    cfg = study_config(Path(args.run), out, "probe", args.policy_init)
    path = out / f"probe_{args.episodes}.json"
    cfg.eval.oracle_episodes = args.episodes
    cfg.eval.oracle_deadline_s = args.game_deadline
    cfg.eval.probe_file = str(path)
    loop = build_run(cfg).loop
    loop.setup()
    started = time.monotonic()
    with loop.rollout_mode(), torch.no_grad():
        loop.evaluator.judge_accuracy()  # plays, labels and saves the probe
    for split, p in load_probes(path).items():
        labels = [x for y in p.labels for x in y]
        print(
            f"{split}: {len(p.episodes)} episodes ({sum(e.won for e in p.episodes)} won), {len(labels)} steps, "
            f"{sum(x > 0 for x in labels)} progress; left out past {args.game_deadline:g} s: {p.left_out}"
        )
    print(f"played and labelled in {(time.monotonic() - started) / 60:.1f} min -> {path}")


def score(args: argparse.Namespace) -> None:
    """Measure the judges of finished runs (their ``last.ckpt``) and untrained judges on the same labelled sets.

    The probe set cannot resolve a 10-point change (12 progress steps In-Dom); the held-out steps can. An untrained
    judge is the run config's judge built with another seed (``--untrained-seeds``: a run of seed ``k`` starts from
    ``1000 + k``); a checkpoint's ``judge.*`` weights replace the judge in turn. Rows are merged into
    ``runs_scores.csv`` by judge name (a judge scored again replaces its rows).
    """
    out = Path(args.out)
    cfg = study_config(Path(args.run), out, "score", args.policy_init)
    run = build_run(cfg)
    loop, source = run.loop, run.loop.driver
    loop.setup()
    _, probes = study_sets(out, args.seed, Path(args.probe))
    judges: list[tuple[str, Callable[[], dict[str, torch.Tensor]]]] = [
        (f"untrained/seed{s}", partial(_untrained_judge, cfg, s)) for s in args.untrained_seeds
    ]
    judges += [
        ("/".join(Path(c).parts[-5:-2:2]), partial(_checkpoint_judge, c)) for c in args.checkpoints
    ]  # <profile>/<run>
    path = out / "runs_scores.csv"
    rows = [r for r in csv.DictReader(path.open())] if path.is_file() else []
    for name, weights in judges:
        loop.judge.load_state_dict(weights())
        rows = [r for r in rows if r["judge"] != name or r["set"] not in probes]  # other probes' rows stay
        with loop.rollout_mode(), torch.no_grad():
            for set_name, probe in probes.items():
                rows.append({"judge": name, "set": set_name, **measure(source, probe, cfg)})
        print(
            "  ".join(
                f"{r['judge']} {r['set']} bacc={float(r['bacc']):.3f} auc={float(r['auc']):.3f}" for r in rows[-3:]
            )
        )
        write_csv(path, rows)


def _untrained_judge(cfg: DictConfig, seed: int) -> dict[str, torch.Tensor]:
    judge, _ = instantiate(cfg.model.judge, seed=seed)
    return judge.state_dict()


def _checkpoint_judge(checkpoint: str) -> dict[str, torch.Tensor]:
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    return {k.removeprefix("judge."): v for k, v in state.items() if k.startswith("judge.")}


def split_batches(batches: Any, held: set[str]) -> tuple[list[JudgeProbe], JudgeProbe]:
    """Training batches without the held-out games' rollouts, and those rollouts as one labelled set."""
    train_batches, held_eps, held_labels = [], [], []
    for p in batches:
        keep = [(e, y) for e, y in zip(p.episodes, p.labels) if e.task_id not in held]
        held_eps += [e for e in p.episodes if e.task_id in held]
        held_labels += [y for e, y in zip(p.episodes, p.labels) if e.task_id in held]
        if keep:
            train_batches.append(JudgeProbe(p.split, [e for e, _ in keep], [y for _, y in keep]))
    return train_batches, JudgeProbe("held_out", held_eps, held_labels)


def measure(source: Any, probe: JudgeProbe, cfg: DictConfig) -> dict[str, float]:
    """Balanced accuracy of the majority votes (the run's vote seeds) and AUC of ``P(+1)``, with bootstrap intervals."""
    if not isinstance(source.judge_collector.votes, EncoderVotes):
        raise SystemExit("the study measures the encoder judge (model=minilm-scorer); this run's judge is another")
    judged, _ = source.judge_collector.judge(probe.episodes, seed=derive_seed(int(cfg.eval.seed), probe.split, "probe"))
    votes = [step_majority_votes(e) for e in judged]
    p_plus = [[step_probability(s.judge[0]) for s in e.steps] for e in judged]
    return summarize(votes, p_plus, probe.labels, seed=int(cfg.eval.seed))


def step_probability(vote: JudgeSample) -> float:
    """``P(+1)`` of a step under the encoder judge, from one of its votes: each vote records the log-probability of
    the sign it drew (``EncoderVotes.sample``), so no second pass of the encoder is needed."""
    p = math.exp(vote.logprobs[0])
    return p if vote.vote > 0 else 1.0 - p


def summarize(votes: Sequence[Sequence[int]], p_plus: Sequence[Sequence[float]], labels: Sequence[Sequence[int]],
              *, seed: int) -> dict[str, float]:  # fmt: skip
    """Point values and 95% bootstrap intervals over episodes of the balanced accuracy and the AUC."""

    def values(idx: Sequence[int]) -> tuple[float, float]:
        v = torch.tensor([x for i in idx for x in votes[i]]) > 0
        p = torch.tensor([x for i in idx for x in p_plus[i]], dtype=torch.float64)
        y = torch.tensor([x for i in idx for x in labels[i]]) > 0
        if not bool(y.any()) or bool(y.all()):
            return float("nan"), float("nan")
        return balanced_accuracy(v, y), float(binary_auroc(p, y.long()))

    n = len(labels)
    bacc, auc = values(range(n))
    gen = random.Random(seed)
    draws = [values([gen.randrange(n) for _ in range(n)]) for _ in range(BOOTSTRAP)]
    draws = [d for d in draws if d[0] == d[0]]

    def interval(k: int) -> tuple[float, float]:
        s = sorted(d[k] for d in draws)
        return s[int(0.025 * len(s))], s[int(0.975 * len(s)) - 1]

    steps = sum(len(y) for y in labels)
    positives = sum(x > 0 for y in labels for x in y)
    (b_lo, b_hi), (a_lo, a_hi) = interval(0), interval(1)
    return {"episodes": n, "steps": steps, "progress_steps": positives, "bacc": bacc, "bacc_lo": b_lo,
            "bacc_hi": b_hi, "auc": auc, "auc_lo": a_lo, "auc_hi": a_hi}  # fmt: skip


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """The rows as CSV, atomically."""
    lines = [",".join(rows[0])] + [",".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values())
                                   for r in rows]  # fmt: skip
    atomic_write_text(path, "\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------ report
def report(args: argparse.Namespace) -> None:
    """A table of the first, second and last epoch of every variant, and the curves (``judge_study.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(args.out)
    rows = [
        r for f in sorted(out.glob("scores_*.csv")) if f.name != "scores_runs.csv" for r in csv.DictReader(f.open())
    ]
    if not rows:
        raise SystemExit(f"--out: no scores_*.csv in {out}; run `train` first")
    sets = list(dict.fromkeys(r["set"] for r in rows))
    variants = list(dict.fromkeys(r["targets"] for r in rows))
    fig, axes = plt.subplots(2, len(sets), figsize=(4 * len(sets), 6), sharex=True, squeeze=False)
    for j, name in enumerate(sets):
        for v in variants:
            rs = [r for r in rows if r["set"] == name and r["targets"] == v]
            ep = [int(r["epoch"]) for r in rs]
            for i, key in enumerate(("bacc", "auc")):
                ax = axes[i][j]
                ax.plot(ep, [float(r[key]) for r in rs], marker="o", label=v)
                ax.fill_between(ep, [float(r[key + "_lo"]) for r in rs], [float(r[key + "_hi"]) for r in rs], alpha=0.2)
                ax.axhline(0.5, color="grey", lw=0.5)
                ax.set_title(f"{name}: {'balanced accuracy' if key == 'bacc' else 'AUC of P(+1)'}", fontsize=9)
        axes[1][j].set_xlabel("epoch over the fixed rollouts")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "judge_study.png", dpi=110)
    table = ["| targets | set | steps (progress) | epoch | balanced acc. [95% CI] | AUC of P(+1) [95% CI] |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for v in variants:
        for name in sets:
            rs = [r for r in rows if r["set"] == name and r["targets"] == v]
            # the start, one epoch (about a 12-iteration run's judge updates: 13 calls vs 12) and the end
            for r in {id(r): r for r in (rs[0], rs[min(1, len(rs) - 1)], rs[-1])}.values():
                table.append(
                    f"| {v} | {name} | {r['steps']} ({r['progress_steps']}) | {r['epoch']} | "
                    f"{100 * float(r['bacc']):.1f} "
                    f"[{100 * float(r['bacc_lo']):.1f}, {100 * float(r['bacc_hi']):.1f}] | "
                    f"{float(r['auc']):.3f} [{float(r['auc_lo']):.3f}, {float(r['auc_hi']):.3f}] |"
                )
    atomic_write_text(out / "judge_study.md", "\n".join(table) + "\n")
    collected = read_json(out / ROLLOUTS).get("settings") if (out / ROLLOUTS).is_file() else None
    meta = {"command": " ".join(sys.argv), "variants": variants, "sets": sets, "collect": collected}
    atomic_write_json(out / "meta.json", meta)
    print("\n".join(table))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=["collect", "train", "probe", "score", "report"])
    parser.add_argument("--out", required=True, help="the study's folder (rollouts.json, scores_*.csv, the table)")
    parser.add_argument("--run", default=str(DEFAULT_RUN), help="a committed ablation run with a judge (its config)")
    parser.add_argument("--policy-init", default=None, help="the warm-start policy (default: the run's policy_init)")
    parser.add_argument("--iterations", type=int, default=16, help="collect: training batches to play and label")
    parser.add_argument("--workers", type=int, default=2, help="collect: games labelled at once")
    parser.add_argument("--game-deadline", type=float, default=120.0,
                        help="collect: planner seconds per game; probe: per episode")  # fmt: skip
    parser.add_argument("--targets", choices=["consistency", "planner"], default="consistency")
    parser.add_argument("--epochs", type=int, default=6, help="train: passes over the fixed training batches")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="train: change the run's resolved config (e.g. optim.judge_optimizer.lr=3e-4)",
    )
    parser.add_argument("--tag", default="", help="train: a name for the variant (scores_<targets>_<tag>.csv)")
    parser.add_argument("--checkpoints", nargs="*", default=[], help="score: runs' checkpoints/last.ckpt")
    parser.add_argument("--episodes", type=int, default=16, help="probe: episodes per evaluation split")
    parser.add_argument("--probe", default=str(DEFAULT_PROBE), help="score: the probe file (default: the committed)")
    parser.add_argument("--untrained-seeds", nargs="*", type=int, default=[1000], help="score: untrained judges")
    parser.add_argument("--seed", type=int, default=0, help="which half of the pool's games is held out")
    args = parser.parse_args(argv)
    {"collect": collect, "train": train, "probe": probe, "score": score, "report": report}[args.stage](args)


if __name__ == "__main__":
    main()
