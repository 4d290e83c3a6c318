"""ALFWorld episodes per second of the CPU policy and judge (all-MiniLM-L6-v2) under the speed options, side by side.

    python -m benchmarks.bench_alfworld_episodes [--games 6] [--rounds 2] [--max-steps 30] [--threads 1]
        [--policy-init PATH] [--variants float32/128 bfloat16/128 float32/64 bfloat16/64] [--votes 3]

A variant is ``<frozen precision>/<state tokens>``: the precision of the frozen bottom layers
(``rlanything_core.models.encoder.FrozenPrecision``; the judge's too) and the policy's ``max_state_tokens``. The
first variant is the baseline (the default: float32, 128 tokens); every ratio is over it.

Each variant plays the same games with the same episode seeds (one episode per game, the evaluation's sampling at
temperature 1, engines loaded once by a warm-up), then its judge votes ``--votes`` times on every step. The frozen
bottom caches are emptied before every measurement, so every state is new, as in an evaluation. Rounds interleave
the variants (rotated each round) in this one process, so a loaded machine slows them alike; the sums over rounds
are compared. ``--threads 1`` is a seed worker's budget in ``experiments/ablate.py``.

Prints a table (episodes per wall second and per CPU second of this process, states per CPU second, the policy's and
the judge's wall ms per state, success) and, as its last line, ``episodes_per_cpu_s=<baseline> <variant>=<ratio> ...``
(ratios of episodes per CPU second over the baseline). With one thread, CPU time is what the variant costs an idle
core; on a machine loaded by other jobs it is the fairer figure (the wall ratios are printed beside it). The success
column counts wins of these few episodes (a warm start through ``--policy-init`` makes it meaningful; the numbers
differ between variants because the options change the scores).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Tally", "main", "parse_variant"]


def parse_variant(text: str) -> tuple[str, int]:
    """``("bfloat16", 64)`` from ``"bfloat16/64"``.

    Raises:
        ValueError: not ``<precision>/<tokens>`` with a known precision and ``tokens >= 3``.
    """
    from rlanything_core.models.encoder import FrozenPrecision

    precision, _, tokens = text.partition("/")
    if not tokens.isdigit() or int(tokens) < 3:
        raise ValueError(f"variant: expected '<precision>/<state tokens >= 3>', got {text!r}")
    return FrozenPrecision.parse(precision).value, int(tokens)


@dataclass
class Tally:
    """What one variant did, summed over rounds."""

    episodes: int = 0
    steps: int = 0
    won: int = 0
    seconds: float = 0.0  # wall: rollouts (policy + engine) and the judge's votes
    cpu_seconds: float = 0.0  # this process's CPU time of the same (one thread: what an idle core would take)
    policy_s: float = 0.0
    judge_s: float = 0.0


class _TimedSelector:
    """Times the wrapped selector's calls (the policy's share of a rollout)."""

    def __init__(self, selector: Any) -> None:
        self.selector = selector
        self.boxed_answer = selector.boxed_answer
        self.seconds = 0.0

    def render_state(self, *args: Any) -> Any:
        return self.selector.render_state(*args)

    def select(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = self.selector.select(*args, **kwargs)
        self.seconds += time.perf_counter() - start
        return out


def _models(precision: str, tokens: int, init: str | None) -> tuple[Any, Any]:
    from rlanything_core.models.encoder_judge import minilm_judge
    from rlanything_core.models.scorer import minilm_scorer

    policy, _ = minilm_scorer(max_state_tokens=tokens, frozen_precision=precision)
    if init is not None:
        policy.load_state_dict(torch.load(init, map_location="cpu", weights_only=True))
    judge, _ = minilm_judge(frozen_precision=precision, seed=1000)
    return policy.eval(), judge.eval()


def _play(
    policy: Any, judge: Any, games: Sequence[Any], *, seed: int, max_steps: int, votes: int, tally: Tally
) -> None:
    """One episode per game, then the judge's votes on every step; adds to ``tally``."""
    from rlanything_core.collect.agent import AgentCollector, SequentialRunner
    from rlanything_core.collect.judge import JudgeCollector
    from rlanything_core.collect.scorer_selection import EncoderVotes, ScorerSelector
    from rlanything_core.envs.alfworld.env import AlfworldEnvFactory

    for model in (policy, judge):
        model.encoder.bottom_cache.items.clear()  # every state new, as in an evaluation
    selector = _TimedSelector(ScorerSelector(temperature=1.0))
    runner = SequentialRunner(AlfworldEnvFactory(max_episode_steps=max_steps))
    collector = AgentCollector(policy, runner, selector, group_size=1, max_steps=max_steps, max_history_turns=2)
    start, cpu_start = time.perf_counter(), time.process_time()
    with torch.no_grad():
        episodes, stats = collector.collect(list(games), seed=seed)
        runner.close()
        middle = time.perf_counter()
        JudgeCollector(judge, num_votes=votes, votes=EncoderVotes()).judge(episodes, seed=seed)
    end, cpu_end = time.perf_counter(), time.process_time()
    tally.episodes += stats.episodes
    tally.steps += stats.steps
    tally.won += stats.won
    tally.seconds += end - start
    tally.cpu_seconds += cpu_end - cpu_start
    tally.policy_s += selector.seconds
    tally.judge_s += end - middle


def main(argv: Sequence[str] | None = None) -> None:
    """Measure every variant, print the table and the ratio line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=6, help="valid_seen games, stratified over the task types")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=30, help="episode limit (the CPU evaluation's: 30)")
    parser.add_argument("--votes", type=int, default=3, help="judge votes per step")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy-init", default=None, help="a policy state dict (e.g. the encoder warm start)")
    parser.add_argument("--variants", nargs="+", default=["float32/128", "bfloat16/128", "float32/64", "bfloat16/64"])
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in args.variants]
    names = [f"{p}/{t}" for p, t in variants]
    torch.set_num_threads(args.threads)

    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.sampling import stratified_sample

    games = stratified_sample(list_games("valid_seen"), args.games, stratum=lambda g: g.task_type, seed=args.seed)
    models = {name: _models(p, t, args.policy_init) for name, (p, t) in zip(names, variants)}
    # warm-up: loads every game's engine (reused by later episodes of the game) and the first calls' overheads
    _play(*models[names[0]], games, seed=args.seed, max_steps=2, votes=1, tally=Tally())
    tallies = {name: Tally() for name in names}
    for r in range(args.rounds):
        for k in range(len(names)):
            name = names[(k + r) % len(names)]
            seed = args.seed + 1 + r  # the same episodes for every variant of a round
            _play(*models[name], games, seed=seed, max_steps=args.max_steps, votes=args.votes, tally=tallies[name])

    base = tallies[names[0]]
    print(f"{len(games)} games x {args.rounds} rounds, <= {args.max_steps} steps, {args.votes} votes/step, "
          f"{args.threads} thread(s), policy {'warm start' if args.policy_init else 'pretrained'}")
    print(f"{'variant':<14} {'eps/wall s':>10} {'ratio':>6} {'eps/cpu s':>10} {'ratio':>6} {'states/cpu s':>12} "
          f"{'ratio':>6} {'policy ms':>9} {'judge ms':>8} {'success':>8}")
    ratios = []
    for name in names:
        t = tallies[name]
        wall, cpu, sps = t.episodes / t.seconds, t.episodes / t.cpu_seconds, t.steps / t.cpu_seconds
        cpu_ratio = cpu / (base.episodes / base.cpu_seconds)
        ratios.append(f"{name}={cpu_ratio:.2f}")
        print(f"{name:<14} {wall:>10.4f} {wall / (base.episodes / base.seconds):>6.2f} {cpu:>10.4f} {cpu_ratio:>6.2f} "
              f"{sps:>12.2f} {sps / (base.steps / base.cpu_seconds):>6.2f} {1000 * t.policy_s / t.steps:>9.1f} "
              f"{1000 * t.judge_s / t.steps:>8.1f} {t.won:>3}/{t.episodes:<4}")
    print(f"episodes_per_cpu_s={base.episodes / base.cpu_seconds:.4f} " + " ".join(ratios))


if __name__ == "__main__":
    main()
