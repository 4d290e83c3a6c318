"""Warm start of the encoder-scorer policy (``model=minilm-scorer``) on ALFWorld's hand-coded expert, and its targets.

Demonstrations: the hand-coded expert (``envs/alfworld/expert.py``; never the PDDL planner) on an equal share of
games of each of the six task types of a *training* split (``train`` by default), cached. The policy (all-MiniLM-L6-v2
bi-encoder, ``models/scorer.py``) is fitted with the candidate cross-entropy (``training/scorer_sft.py``), optionally
followed by DAgger rounds (the policy plays training games, the expert labels the states it reached). The fitted
weights are cached under ``~/.cache/rlanything/warm_start/`` by a content hash of the recipe (every argument that
changes the weights), the training games' bytes and the code that makes them
(:func:`~rlanything_core.ablation.warm_start_cache.weights_key`), so seeds, arms, profiles, later runs and other
checkouts share one warm start; an interrupted fit resumes from its checkpoint.

Printed figures (the warm start's targets): held-out top-1 agreement with the expert (``valid_train`` games, never
trained on), success within ``--eval-steps`` at each temperature on ``valid_seen`` (and ``valid_unseen``) games drawn
in proportion to the split's task types, per task type; the milliseconds per scored step on one thread (wall and
thread CPU time, with the load average: CPU time is what an idle thread would take); the warm start's wall time.

Usage::

    python -m rlanything_core.ablation.warm_start_encoder                  # the default recipe and its figures
    python -m rlanything_core.ablation.warm_start_encoder --eval-games 0 --save policy.pt   # what ablate.py runs
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import cast

import torch

from rlanything_core.ablation.warm_start_cache import cpu_seconds, warm_start_dir, weights_key
from rlanything_core.collect.agent import AgentCollector, EpisodeRunner
from rlanything_core.collect.scorer_selection import ScorerSelector
from rlanything_core.collect.state_text import alfworld_state_text
from rlanything_core.envs.alfworld.data import list_games
from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
from rlanything_core.envs.alfworld.expert import ExpertKind, ExpertStep, expert_labels, load_or_build_expert_steps
from rlanything_core.envs.alfworld.stratify import games_per_type, proportional_games
from rlanything_core.envs.parallel import EnvPool
from rlanything_core.files import atomic_write_bytes
from rlanything_core.models.scorer import EncoderScorerPolicy, minilm_scorer
from rlanything_core.records import Episode
from rlanything_core.training.scorer_sft import ScorerExample, fit_scorer, top1_agreement

WEIGHT_ARGS = ("split", "games_per_type", "expert_steps", "history", "recent_actions", "trainable_layers",
               "max_state_tokens", "epochs", "batch_size", "encoder_lr", "head_lr", "dagger_rounds",
               "dagger_games_per_type", "dagger_epochs", "seed", "threads")
"""The arguments that change the fitted weights (the cache key; the torch threads too: they may reorder sums)."""


def recipe_key(args: argparse.Namespace) -> str:
    """The content hash naming the cached weights: the recipe, the training games' bytes and the code that fits them."""
    games = _training_games(args)
    for round_index in range(args.dagger_rounds):  # the games each DAgger round plays are data too
        games += _dagger_games(args, round_index)
    return weights_key({k: getattr(args, k) for k in WEIGHT_ARGS}, games, "ablation/warm_start_encoder.py")


def demonstrations(games: list[str], args: argparse.Namespace, tag: str) -> list[ExpertStep]:
    """The hand-coded expert's steps on ``games`` (training split only), cached by the game list."""
    key = hashlib.sha256("\n".join(games).encode()).hexdigest()[:12]
    # handcoded2: the pick-two repair
    cache = warm_start_dir() / f"{tag}-handcoded2-n{len(games)}-s{args.expert_steps}-{key}.json"
    return load_or_build_expert_steps(games, cache, expert=ExpertKind.HANDCODED, max_steps=args.expert_steps,
                                      num_workers=args.workers, progress=args.progress)


def examples_of(steps: list[ExpertStep], args: argparse.Namespace) -> list[ScorerExample]:
    """Supervised decisions: the state text the loop renders, the admissible commands, the expert's index."""
    return [ScorerExample(alfworld_state_text(s.goal, s.history, s.observation, earlier_turns=args.history,
                                              recent_actions=args.recent_actions),
                          tuple(s.admissible_actions), s.admissible_actions.index(s.action))
            for s in steps if s.action in s.admissible_actions]


def _selector(args: argparse.Namespace, temperature: float) -> ScorerSelector:
    return ScorerSelector(temperature=temperature, earlier_turns=args.history, recent_actions=args.recent_actions)


def play(policy: EncoderScorerPolicy, games: list[str], args: argparse.Namespace, *, temperature: float,
         runs: int, seed: int) -> list[Episode]:
    """``runs`` episodes of the policy on each game, ``args.eval_steps`` steps at most."""
    with EnvPool(AlfworldEnvFactory(max_episode_steps=args.eval_steps), num_workers=args.workers) as pool:
        collector = AgentCollector(policy, cast(EpisodeRunner, pool), _selector(args, temperature), group_size=runs,
                                   max_steps=args.eval_steps, progress=args.progress)
        episodes, _ = collector.collect(games, seed=seed)
    return episodes


def dagger_round(policy: EncoderScorerPolicy, round_index: int, args: argparse.Namespace) -> list[ExpertStep]:
    """The policy plays training games at T=1; the expert labels every state it reached."""
    games = _dagger_games(args, round_index)
    seed = args.seed + 1000 * (round_index + 1)
    episodes = play(policy, games, args, temperature=1.0, runs=1, seed=seed)
    labelled = expert_labels([(e.task_id, [s.action for s in e.steps]) for e in episodes], seed=seed,
                             num_workers=args.workers)
    won = sum(e.won for e in episodes) / max(1, len(episodes))
    print(f"dagger round {round_index + 1}: the policy won {won:.3f} of {len(episodes)} {args.split} games; "
          f"{len(labelled)} states labelled by the expert", flush=True)
    return labelled


def _training_games(args: argparse.Namespace) -> list[str]:
    return [str(g.game_file) for g in games_per_type(list_games(args.split), args.games_per_type, seed=args.seed)]


def _dagger_games(args: argparse.Namespace, round_index: int) -> list[str]:
    return [str(g.game_file) for g in games_per_type(list_games(args.split), args.dagger_games_per_type,
                                                     seed=args.seed + 1 + round_index)]


def train(args: argparse.Namespace) -> tuple[EncoderScorerPolicy, float]:
    """The warm-started policy (from the cache when this recipe was fitted before) and the seconds it took here."""
    policy, _ = minilm_scorer(trainable_layers=args.trainable_layers, max_state_tokens=args.max_state_tokens,
                              seed=args.seed)
    cached = warm_start_dir() / f"encoder-{recipe_key(args)}.pt"
    if cached.is_file() and not args.refit:
        policy.load_state_dict(torch.load(cached, map_location="cpu", weights_only=True))
        print(f"warm start: reused {cached} (same recipe, games and code)", flush=True)
        return policy, 0.0
    started, cpu_started = time.time(), cpu_seconds()
    games = _training_games(args)
    steps = demonstrations(games, args, args.split)
    won = {s.game_file for s in steps}
    types = Counter(Path(g).parent.parent.name.split("-", 1)[0] for g in won)
    print(f"demonstrations: {len(steps)} steps from {len(won)}/{len(games)} {args.split} games won by the hand-coded "
          f"expert ({dict(sorted(types.items()))}); {time.time() - started:.1f} s wall, "
          f"{cpu_seconds() - cpu_started:.1f} s CPU", flush=True)
    examples = examples_of(steps, args)
    policy.encoder.bottom_cache.capacity = max(policy.encoder.bottom_cache.capacity, len(examples) + 64)
    partial = cached.with_suffix(".partial.pt")
    for round_index in range(args.dagger_rounds + 1):
        if round_index:
            examples = examples + examples_of(dagger_round(policy, round_index - 1, args), args)
            policy.encoder.bottom_cache.capacity = max(policy.encoder.bottom_cache.capacity, len(examples) + 64)
        epochs = args.epochs if not round_index else args.dagger_epochs
        fit_started, fit_cpu = time.time(), cpu_seconds()
        losses = fit_scorer(policy, examples, epochs=epochs, batch_size=args.batch_size, encoder_lr=args.encoder_lr,
                            head_lr=args.head_lr, seed=args.seed + round_index,
                            checkpoint=partial.with_suffix(f".r{round_index}.pt"), progress=args.progress)
        tail = losses[-20:] or [float("nan")]
        print(f"training (round {round_index}): {len(examples)} examples x {epochs} epochs, loss "
              f"{(losses[0] if losses else float('nan')):.3f} -> {sum(tail) / len(tail):.3f}; "
              f"{time.time() - fit_started:.1f} s wall, {cpu_seconds() - fit_cpu:.1f} s CPU", flush=True)
    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    atomic_write_bytes(cached, buffer.getvalue())
    for round_index in range(args.dagger_rounds + 1):
        partial.with_suffix(f".r{round_index}.pt").unlink(missing_ok=True)
    policy.encoder.bottom_cache.capacity = 2048
    policy.encoder.bottom_cache.items.clear()
    print(f"warm start CPU time (demonstrations and training; an idle machine's wall time at {args.workers} expert "
          f"workers is about this over the cores used): {(cpu_seconds() - cpu_started) / 60:.1f} min", flush=True)
    return policy, time.time() - started


def benchmark(policy: EncoderScorerPolicy, steps: list[ExpertStep], args: argparse.Namespace) -> str:
    """Milliseconds per scored step, one state at a time as in a rollout of one episode (commands cached)."""
    selector = _selector(args, 1.0)
    prompts = [(selector.render_state(s.goal, s.history, s.observation), list(s.admissible_actions))
               for s in steps[: args.bench_steps]]
    selector.select(policy, [prompts[0][0]], [prompts[0][1]], seeds=[0])  # warm-up
    policy.encoder.bottom_cache.items.clear()  # every state is new to the policy, as in a rollout
    walls, cpus = [], []
    for k, (prompt, cands) in enumerate(prompts):
        w, c = time.perf_counter(), time.thread_time()
        selector.select(policy, [prompt], [cands], seeds=[k])
        walls.append(1000 * (time.perf_counter() - w))
        cpus.append(1000 * (time.thread_time() - c))
    cpus.sort()
    walls.sort()
    load = os.getloadavg()[0]
    return (f"ms per scored step ({len(prompts)} steps, {torch.get_num_threads()} thread): CPU median "
            f"{statistics.median(cpus):.1f}, p90 {cpus[int(0.9 * (len(cpus) - 1))]:.1f} (idle-thread equivalent); "
            f"wall median {statistics.median(walls):.1f}, p90 {walls[int(0.9 * (len(walls) - 1))]:.1f}; "
            f"load average {load:.2f} on {os.cpu_count()} CPUs")


def evaluate(policy: EncoderScorerPolicy, split: str, args: argparse.Namespace) -> None:
    """Success per temperature and per task type on ``args.eval_games`` games of ``split`` drawn in proportion."""
    chosen = proportional_games(list_games(split), args.eval_games, seed=args.seed)
    type_of = {str(g.game_file): g.task_type for g in chosen}
    for temperature in args.temperatures:
        started = time.time()
        episodes = play(policy, list(type_of), args, temperature=temperature, runs=args.eval_runs, seed=args.seed)
        won: Counter[str] = Counter()
        total: Counter[str] = Counter()
        loops = 0
        for e in episodes:
            total[type_of[e.task_id]] += 1
            won[type_of[e.task_id]] += int(e.won)
            actions = [s.action for s in e.steps]
            loops += int(not e.won and any(actions.count(a) >= 4 for a in set(actions)))
        per_type = ", ".join(f"{t} {won[t]}/{total[t]}" for t in sorted(total))
        print(f"success {split} ({len(type_of)} games in proportion x {args.eval_runs}, {args.eval_steps} steps, "
              f"T={temperature}): {sum(won.values()) / len(episodes):.3f} ({per_type}); failed episodes repeating one "
              f"action 4+ times: {loops}/{len(episodes) - sum(won.values())}; {time.time() - started:.1f} s",
              flush=True)


def main(argv: list[str] | None = None) -> None:
    """Warm-start (or reuse), then print the figures (``argv``: the command line, default ``sys.argv``)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", default="train", choices=["train", "valid_train"])
    p.add_argument("--games-per-type", type=int, default=24, help="training games of each of the six task types")
    p.add_argument("--expert-steps", type=int, default=30)
    p.add_argument("--history", type=int, default=2, help="earlier turns in the state text")
    p.add_argument("--recent-actions", type=int, default=4, help="commands on the state text's last-actions line")
    p.add_argument("--trainable-layers", type=int, default=2)
    p.add_argument("--max-state-tokens", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--encoder-lr", type=float, default=1e-4)
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--dagger-rounds", type=int, default=0)
    p.add_argument("--dagger-games-per-type", type=int, default=10)
    p.add_argument("--dagger-epochs", type=int, default=1)
    p.add_argument("--heldout-per-type", type=int, default=5, help="valid_train games per type for the top-1")
    p.add_argument("--eval-games", type=int, default=32, help="evaluation games per split, types in proportion")
    p.add_argument("--eval-runs", type=int, default=2)
    p.add_argument("--eval-steps", type=int, default=30)
    p.add_argument("--temperatures", type=float, nargs="+", default=[1.0])
    p.add_argument("--unseen", action="store_true", help="also evaluate on valid_unseen")
    p.add_argument("--bench-steps", type=int, default=100, help="scored steps timed (0: no benchmark)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--refit", action="store_true", help="fit again even when this recipe is cached")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--save", default="", help="also write the state dict here (what model.policy_init loads)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    policy, seconds = train(args)
    if args.save:
        buffer = io.BytesIO()
        torch.save(policy.state_dict(), buffer)
        atomic_write_bytes(args.save, buffer.getvalue())
    if seconds:
        print(f"warm start total (demonstrations and training): {seconds / 60:.1f} min wall", flush=True)
    if args.heldout_per_type > 0 or args.bench_steps > 0:
        trained = set(_training_games(args)) if args.split == "valid_train" else set()
        pool = [g for g in list_games("valid_train") if str(g.game_file) not in trained]
        held = [str(g.game_file) for g in games_per_type(pool, max(1, args.heldout_per_type), seed=args.seed + 77)]
        held_steps = demonstrations(held, args, "valid_train-heldout")
        if args.heldout_per_type > 0:
            examples = examples_of(held_steps, args)
            print(f"held-out top-1 vs the expert ({len(examples)} steps of {len(held)} valid_train games, all six "
                  f"types): {top1_agreement(policy, examples):.3f}", flush=True)
        if args.bench_steps > 0:
            print(benchmark(policy, held_steps, args), flush=True)
    if args.eval_games > 0:
        for split in ["valid_seen"] + (["valid_unseen"] if args.unseen else []):
            evaluate(policy, split, args)


if __name__ == "__main__":
    main()
