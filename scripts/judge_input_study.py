"""Does the encoder judge's input carry the process? Today's input beside the state-summary one, on the same steps.

The steps are training rollouts of the warm-start policy on the ALFWorld training pool (the run's own collector,
``build_run`` of the train config), each labelled exactly by ALFWorld's hand-coded expert: does the action equal the
expert's next command from that state (``envs/alfworld/expert_agreement.py``; states the expert gives up on are left
out). Each judge input (``collect.state_text``: ``ActionResultText``, the default, and ``StateSummaryText``) is
measured, by task type, by

- **untrained judges**: the run's judge built with seeds ``1000 + k`` (the head the runs start from; its P(+1) is near
  1/2 everywhere, so its AUC says what the input's frozen features order by chance), and
- **a trained head** (a linear probe): a class-balanced logistic head on the judge's encoder features, fitted on the
  expert labels of a seeded half of the games and measured on the other half. It says what the judge's head can
  learn from each input when its feedback names the process exactly; the judge of a run learns from consistency
  feedback instead (``experiments/judge_study.py``).

Measures: the ROC AUC of P(+1) and the balanced accuracy of ``P(+1) > 1/2`` (the majority of many votes).

    python experiments/judge_input_study.py --out experiments/results/alfworld/judge_input --policy-init PT
"""

from __future__ import annotations

import argparse
import csv
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from hydra import compose, initialize_config_dir
from torchmetrics.functional.classification import binary_auroc

from rlanything_core.assembly import build_run
from rlanything_core.collect.scorer_selection import EncoderVotes
from rlanything_core.collect.state_text import ActionResultText, JudgeStepText, StateSummaryText
from rlanything_core.conf import CONF_DIR
from rlanything_core.envs.alfworld.expert_agreement import AlfworldExpertLabeller
from rlanything_core.files import atomic_write_text
from rlanything_core.loop.judge_probe import balanced_accuracy
from rlanything_core.models.encoder_judge import minilm_judge

VARIANTS: dict[str, JudgeStepText] = {"action_result": ActionResultText(3), "state_summary": StateSummaryText(4)}
KITCHEN = ("pick_clean_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_heat_then_place_in_recep")


def collect_steps(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Play ``--iterations`` training batches with the warm-start policy; one expert-labelled row per step."""
    overrides = ["+setting=alfworld", "model=minilm-scorer", "arm=outcome_only",
                 f"model.policy_init={args.policy_init}", f"tasks_per_iteration={args.tasks}",
                 f"group_size={args.group_size}", "setting.env_workers=1",
                 "progress=false", f"run_dir={Path(args.out) / '.collect'}", "resume=false", "+step_records=false",
                 f"seed={args.seed}"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    loop = build_run(cfg).loop
    source = loop.driver
    loop.setup()
    labeller = AlfworldExpertLabeller()
    rows: list[dict[str, Any]] = []
    for it in range(args.iterations):
        tasks = source.tasks_for(it)
        with loop.rollout_mode(), torch.no_grad():
            episodes = source.collect(it).episodes
        games = [source.to_env_task(tasks[e.group_id]) for e in episodes]
        reference = labeller.reference_actions([(g, [s.action for s in e.steps]) for g, e in zip(games, episodes)])
        for k, (e, game, ref) in enumerate(zip(episodes, games, reference)):
            for t, s in enumerate(e.steps):
                rows.append({"iteration": it, "episode": f"{it}/{k}", "game": e.task_id, "won": e.won,
                             "task_type": labeller.task_type(game), "step": t, "action": s.action,
                             "expert_action": ref[t], "episode_obj": e, "step_obj": s})  # fmt: skip
    source.pool.close()
    return rows


def judge_features(rows: Sequence[dict[str, Any]], text: JudgeStepText, seeds: Sequence[int]) -> tuple[Any, ...]:
    """``(features (N, H), {seed: P(+1) (N,)}, truncated fraction)`` of the steps under one judge input."""
    votes = EncoderVotes(step_text=text)
    judge, _ = minilm_judge(seed=seeds[0])
    ids = [judge.text_ids(votes.render_step(r["episode_obj"], r["step_obj"])[-1]["content"]) for r in rows]
    truncated = judge.stats["truncated_texts"] / max(1, judge.stats["texts"])
    with torch.no_grad():
        feats = torch.cat([judge.encoder(ids[i : i + 64]) for i in range(0, len(ids), 64)]).double()
        probs = {}
        for s in seeds:
            head, _ = minilm_judge(seed=s) if s != seeds[0] else (judge, None)
            probs[s] = torch.sigmoid(head.head(feats.float()).squeeze(-1)).double()
    return feats, probs, truncated


def linear_probe(feats: torch.Tensor, y: torch.Tensor, train: torch.Tensor, *, l2: float = 1e-1) -> torch.Tensor:
    """P(+1) of every step under a class-balanced logistic head fitted on the ``train`` steps (standardized)."""
    mu, sd = feats[train].mean(0), feats[train].std(0) + 1e-6
    x = (feats - mu) / sd
    w = torch.zeros(x.shape[1], dtype=x.dtype, requires_grad=True)
    b = torch.zeros((), dtype=x.dtype, requires_grad=True)
    yt = y[train].double()
    pos = float(yt.mean())
    weight = torch.where(yt > 0, 0.5 / max(pos, 1e-6), 0.5 / max(1 - pos, 1e-6))
    opt = torch.optim.LBFGS([w, b], max_iter=300, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        logit = x[train] @ w + b
        loss = (weight * torch.nn.functional.binary_cross_entropy_with_logits(logit, yt, reduction="none")).mean()
        loss = loss + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return torch.sigmoid(x @ w + b)


def scores(p: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """``(AUC of P(+1), balanced accuracy of P(+1) > 1/2)``; NaN where one class is absent."""
    if bool(y.all()) or not bool(y.any()):
        return float("nan"), float("nan")
    return float(binary_auroc(p, y.long())), balanced_accuracy(p > 0.5, y)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--policy-init", required=True, help="the warm start (experiments/warm_start_encoder.py)")
    parser.add_argument("--iterations", type=int, default=4, help="training batches played")
    parser.add_argument("--tasks", type=int, default=8, help="tasks per batch")
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="the run seed (task draws and episodes)")
    parser.add_argument("--judge-seeds", type=int, nargs="+", default=[1000, 1001, 1002])
    parser.add_argument("--split-seed", type=int, default=0, help="which half of the games the probe is fitted on")
    args = parser.parse_args(argv)
    out = Path(args.out)
    started = time.perf_counter()
    rows = [r for r in collect_steps(args) if r["expert_action"] is not None]
    collected = time.perf_counter() - started
    y = torch.tensor([r["action"] == r["expert_action"] for r in rows])
    games = sorted({r["game"] for r in rows})
    fit_games = set(random.Random(args.split_seed).sample(games, len(games) // 2))
    train = torch.tensor([r["game"] in fit_games for r in rows])
    groups: dict[str, torch.Tensor] = {"all": torch.ones(len(rows), dtype=torch.bool)}
    groups["clean/cool/heat"] = torch.tensor([r["task_type"] in KITCHEN for r in rows])
    for t in sorted({r["task_type"] for r in rows}):
        groups[t] = torch.tensor([r["task_type"] == t for r in rows])
    table: list[dict[str, Any]] = []
    for name, text in VARIANTS.items():
        feats, probs, truncated = judge_features(rows, text, args.judge_seeds)
        probe = linear_probe(feats, y, train)
        judges = {f"untrained_seed{s}": (p, torch.ones(len(rows), dtype=torch.bool)) for s, p in probs.items()}
        judges["linear_probe_heldout"] = (probe, ~train)
        for judge, (p, where) in judges.items():
            for group, mask in groups.items():
                m = mask & where
                auc, bacc = scores(p[m], y[m])
                table.append({"input": name, "judge": judge, "task_type": group, "steps": int(m.sum()),
                              "expert_steps": int(y[m].sum()), "auc": auc, "bacc": bacc,
                              "truncated": truncated})  # fmt: skip
    lines = [",".join(table[0])] + [",".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values())
                                    for r in table]  # fmt: skip
    atomic_write_text(out / "judge_input.csv", "\n".join(lines) + "\n")
    with (out / "steps.csv").open("w", newline="") as fh:  # the labelled steps (no text): what the numbers rest on
        w = csv.writer(fh)
        w.writerow(["iteration", "episode", "game", "task_type", "step", "action", "expert_action", "won", "fit_half"])
        for r, tr in zip(rows, train.tolist()):
            w.writerow([r["iteration"], r["episode"], r["game"], r["task_type"], r["step"], r["action"],
                        r["expert_action"], int(r["won"]), int(tr)])  # fmt: skip
    print(f"{len(rows)} labelled steps ({int(y.sum())} the expert's), {len(games)} games; collected in "
          f"{collected:.0f} s, total {time.perf_counter() - started:.0f} s")
    for r in table:
        if r["task_type"] in ("all", "clean/cool/heat"):
            print(f"{r['input']:14s} {r['judge']:22s} {r['task_type']:16s} n={r['steps']:5d} "
                  f"auc={r['auc']:.3f} bacc={r['bacc']:.3f}")


if __name__ == "__main__":
    main()
