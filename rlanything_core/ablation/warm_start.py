"""Supervised warm start of a small ALFWorld policy from scratch, then its success on valid_seen / valid_unseen.

Demonstrations come from ALFWorld's hand-coded expert (``alfworld.agents.expert``, the DAgger expert; it searches the
receptacles it has not seen) on the *training* split only (``valid_train`` or ``train``), cached once under
``~/.cache/rlanything/warm_start/``. The PDDL planner oracle is never used. The policy is a tiny Llama with the
SmolLM2 tokenizer; actions are chosen by the likelihood selector (softmax over the admissible commands' summed
log-likelihoods), at ``T=1.0`` and greedily.

With ``--dagger-rounds R`` (DAgger), after the first fit the policy plays each training game once at T=1, the
hand-coded expert labels every state it reached (``expert_labels``), and the policy is fitted again on all the data
gathered so far, ``R`` times.

Usage (no Hydra)::

    python -m rlanything_core.ablation.warm_start                       # the default recipe
    python -m rlanything_core.ablation.warm_start --loss mixed --eval-games 32 --unseen
    python -m rlanything_core.ablation.warm_start --dagger-rounds 2 --eval-games 32
"""

from __future__ import annotations

import argparse
import hashlib
import io
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import torch

from rlanything_core.ablation.warm_start_cache import cpu_seconds, warm_start_dir
from rlanything_core.collect.action_selection import LikelihoodSelector
from rlanything_core.collect.agent import AgentCollector, EpisodeRunner
from rlanything_core.collect.prompts import agent_messages
from rlanything_core.envs.alfworld.data import list_games
from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
from rlanything_core.envs.alfworld.expert import ExpertKind, ExpertStep, expert_labels, load_or_build_expert_steps
from rlanything_core.envs.parallel import EnvPool
from rlanything_core.files import atomic_write_bytes
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.models.tiny import tiny_model_and_tokenizer
from rlanything_core.records import Episode
from rlanything_core.training.sft import SftLoss, supervised_warm_start


def build_demonstrations(args: argparse.Namespace) -> list[ExpertStep]:
    """The hand-coded expert's steps on the first ``args.games`` games of the training split (cached)."""
    if args.split not in ("train", "valid_train"):
        raise ValueError(f"--split: demonstrations come from a training split (train, valid_train), got {args.split!r}")
    games = [str(g.game_file) for g in list_games(args.split)[args.game_offset : args.game_offset + args.games]]
    key = hashlib.sha256("\n".join(games).encode()).hexdigest()[:12]
    name = f"{args.split}-{args.expert}-n{len(games)}-s{args.expert_steps}-p{args.perturb}-{key}.json"
    cache = Path(args.demos) if args.demos else warm_start_dir() / name
    return load_or_build_expert_steps(games, cache, expert=args.expert, max_steps=args.expert_steps,
                                      perturb_prob=args.perturb, num_workers=args.workers)


def policy_prompt(step: ExpertStep, history: int) -> list[dict[str, str]]:
    """The policy's prompt at a demonstrated state, exactly as the loop renders it (likelihood scoring)."""
    return agent_messages(step.goal, step.history, step.observation, step.admissible_actions,
                          max_history_turns=history, boxed_answer=False)


def play(model: Any, tokenizer: Any, games: list[str], args: argparse.Namespace, *, temperature: float,
         group_size: int, seed: int) -> list[Episode]:
    """``group_size`` episodes of the policy on each game, ``args.eval_steps`` steps at most."""
    backend = TransformersBackend(model, tokenizer, batch_size=64)
    with EnvPool(AlfworldEnvFactory(max_episode_steps=args.eval_steps), num_workers=args.workers) as pool:
        collector = AgentCollector(backend, cast(EpisodeRunner, pool), LikelihoodSelector(temperature=temperature),
                                   group_size=group_size, max_steps=args.eval_steps, max_history_turns=args.history)
        episodes, _ = collector.collect(games, seed=seed)
    return episodes


def evaluate(model: Any, tokenizer: Any, split: str, n_games: int, args: argparse.Namespace) -> dict[str, float]:
    """Success rate on the first ``n_games`` games of ``split``, ``args.group_size`` rollouts each, per temperature."""
    games = [str(g.game_file) for g in list_games(split)[:n_games]]
    out: dict[str, float] = {}
    for temperature in args.temperatures:
        episodes = play(model, tokenizer, games, args, temperature=temperature, group_size=args.group_size,
                        seed=args.seed)
        out[f"T={temperature}"] = sum(e.won for e in episodes) / len(episodes)
    return out


def imitation_accuracy(model: Any, tokenizer: Any, steps: list[ExpertStep], history: int) -> dict[str, float]:
    """Top-1 agreement of the policy's most likely command with the expert's, overall and per expert verb.

    A less noisy figure than a success rate over a few dozen episodes (every step counts), on games not trained on.
    """
    backend = TransformersBackend(model, tokenizer, batch_size=64)
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for s in steps:
        scores = backend.score_continuations(policy_prompt(s, history), list(s.admissible_actions))
        best = s.admissible_actions[max(range(len(scores)), key=scores.__getitem__)]
        verb = s.action.split(" ", 1)[0]
        totals[verb] += 1
        hits[verb] += best == s.action
    out = {"all": sum(hits.values()) / max(1, len(steps))}
    out.update({verb: hits[verb] / totals[verb] for verb in sorted(totals)})
    return out


def fit(model: Any, tokenizer: Any, steps: list[ExpertStep], epochs: int, args: argparse.Namespace) -> list[float]:
    """Train ``model`` on the expert's commands at ``steps`` (the candidate loss by default)."""
    examples = [(policy_prompt(s, args.history), s.action) for s in steps]
    return supervised_warm_start(model, tokenizer, examples, epochs=epochs, lr=args.lr, batch_size=args.batch_size,
                                 seed=args.seed, loss=args.loss, candidates=[s.admissible_actions for s in steps],
                                 max_candidates=args.max_candidates)


def dagger_round(model: Any, tokenizer: Any, round_index: int, args: argparse.Namespace) -> list[ExpertStep]:
    """One DAgger round: the policy plays the training games, the hand-coded expert labels the states it reached."""
    games = [str(g.game_file) for g in list_games(args.split)[args.game_offset : args.game_offset + args.games]]
    seed = args.seed + 1000 * (round_index + 1)
    episodes = play(model, tokenizer, games, args, temperature=1.0, group_size=1, seed=seed)
    labelled = expert_labels([(e.task_id, [s.action for s in e.steps]) for e in episodes], seed=seed,
                             num_workers=args.workers)
    won = sum(e.won for e in episodes) / len(episodes)
    print(f"dagger round {round_index + 1}: the policy won {won:.3f} of {len(episodes)} {args.split} games; "
          f"{len(labelled)} states labelled by the expert", flush=True)
    return labelled


def _parser() -> argparse.ArgumentParser:
    """The command line of :func:`main`."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", default="valid_train")
    p.add_argument("--games", type=int, default=200, help="training games (the expert wins ~70%%)")
    p.add_argument("--game-offset", type=int, default=0)
    p.add_argument("--expert", default=ExpertKind.HANDCODED.value, choices=[k.value for k in ExpertKind])
    p.add_argument("--expert-steps", type=int, default=30, help="keep games the expert wins within this many steps")
    p.add_argument("--perturb", type=float, default=0.0, help="DART noise: random command probability")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--history", type=int, default=2, help="history turns in the prompt (training and eval)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--loss", default=SftLoss.CANDIDATE.value, choices=[k.value for k in SftLoss])
    p.add_argument("--dagger-rounds", type=int, default=0,
                   help="DAgger rounds after the first fit: the policy plays the training games, the expert labels")
    p.add_argument("--dagger-epochs", type=int, default=1, help="epochs over all the data after each DAgger round")
    p.add_argument("--max-candidates", type=int, default=10)
    p.add_argument("--eval-games", type=int, default=16)
    p.add_argument("--eval-steps", type=int, default=20)
    p.add_argument("--group-size", type=int, default=2)
    p.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.0])
    p.add_argument("--unseen", action="store_true", help="also evaluate on valid_unseen")
    p.add_argument("--train-eval", action="store_true", help="also evaluate on the training games")
    p.add_argument("--heldout-games", type=int, default=0,
                   help="score the policy's top command against the expert's on this many later games of the split")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: the env workers run beside it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--demos", default="", help="demonstration cache file (default: under ~/.cache/rlanything)")
    p.add_argument("--save", default="", help="save the trained policy's state dict to this file (.pt)")
    return p


def _train(model: Any, tokenizer: Any, steps: list[ExpertStep], args: argparse.Namespace) -> None:
    """The first fit on the demonstrations, then per DAgger round: play, have the expert label, refit on all so far."""
    n_params = sum(p.numel() for p in model.parameters())
    for round_index in range(args.dagger_rounds + 1):
        if round_index:  # aggregate (DAgger): every earlier round's data stays
            steps = steps + dagger_round(model, tokenizer, round_index - 1, args)
        epochs = args.epochs if not round_index else args.dagger_epochs
        tr, cr = time.time(), cpu_seconds()
        losses = fit(model, tokenizer, steps, epochs, args)
        print(f"training: {n_params / 1e6:.2f} M params, {len(steps)} examples x {epochs} epochs, loss "
              f"{losses[0]:.3f} -> {sum(losses[-5:]) / min(5, len(losses)):.3f}; {time.time() - tr:.1f} s wall, "
              f"{cpu_seconds() - cr:.1f} s CPU", flush=True)


def _report_heldout(model: Any, tokenizer: Any, args: argparse.Namespace) -> None:
    """Print the policy's top-1 agreement with the expert on the games right after the training ones."""
    held = argparse.Namespace(**{**vars(args), "game_offset": args.game_offset + args.games,
                                 "games": args.heldout_games})
    held_steps = build_demonstrations(held)
    figures = ", ".join(f"{k} {v:.3f}" for k, v in imitation_accuracy(model, tokenizer, held_steps,
                                                                      args.history).items())
    print(f"held-out expert steps ({len(held_steps)} from {args.split} games {held.game_offset}-"
          f"{held.game_offset + held.games - 1}), top-1: {figures}", flush=True)


def _report_success(model: Any, tokenizer: Any, args: argparse.Namespace) -> None:
    """Print the success rates on the evaluation splits."""
    splits = ["valid_seen"] + (["valid_unseen"] if args.unseen else []) + ([args.split] if args.train_eval else [])
    for split in splits if args.eval_games > 0 else []:
        n = args.eval_games
        te = time.time()
        result = evaluate(model, tokenizer, split, n, args)
        figures = ", ".join(f"{k} {v:.3f}" for k, v in result.items())
        print(f"success {split} ({n} games x {args.group_size}, {args.eval_steps} steps): {figures}; "
              f"{time.time() - te:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Build the demonstrations, train, evaluate, print the figures (``argv``: the command line, default sys.argv)."""
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)

    t0, c0 = time.time(), cpu_seconds()
    steps = build_demonstrations(args)
    t1, c1 = time.time(), cpu_seconds()
    n_won = len({s.game_file for s in steps})
    print(f"demonstrations: {len(steps)} steps from {n_won}/{args.games} {args.split} games won by the {args.expert} "
          f"expert; {t1 - t0:.1f} s wall, {c1 - c0:.1f} s CPU", flush=True)

    model, tokenizer = tiny_model_and_tokenizer("smollm2", hidden=args.hidden, layers=args.layers, seed=args.seed)
    model.config.max_position_embeddings = max(int(model.config.max_position_embeddings), 4096)  # RoPE: no table
    _train(model, tokenizer, steps, args)
    t2, c2 = time.time(), cpu_seconds()
    if args.save:  # a state dict, as train.py's model.policy_init loads it; atomic, so a crash leaves no torn file
        buffer = io.BytesIO()
        torch.save(model.state_dict(), buffer)
        atomic_write_bytes(args.save, buffer.getvalue())
    if args.heldout_games > 0:  # the games right after the training ones: same split, never trained on
        _report_heldout(model, tokenizer, args)
    _report_success(model, tokenizer, args)
    print(f"warm start total (demonstrations, DAgger rounds, training): {t2 - t0:.1f} s wall, {c2 - c0:.1f} s CPU")


if __name__ == "__main__":
    main()
