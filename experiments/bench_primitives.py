"""Benchmark: vectorized advantage + consistency primitives vs the plain-Python reference, at 10k / 100k / 1M votes.

Pipeline timed on both sides (same semantics): mean votes -> integrated step reward R = O + lam * mean votes ->
per-(task, step index) standardization -> consistency targets R * vote (format penalty for unparseable votes) ->
per-step vote standardization. Batches are seeded and ragged: task groups of 1..8 rollouts, trajectories of 1..40
steps, m = 3 votes per step with ~10% unparseable, NaN at padding. The plain side takes nested lists built before
timing; the vectorized side is timed as the median of a few repeats after a warm-up (torch threads left as they are).

Run: ``python experiments/bench_primitives.py [--threads N]``. On a shared, oversubscribed machine torch's OpenMP
threads stall on each other (every op is a parallel region); ``--threads 1`` then gives the steadier figure. The last
line is
``speedup_1M=<float> scaling_10x=<float> equal=<true|false>`` (scaling = vectorized time at 1M / at 100k; equal =
vectorized == plain within 1e-5 at all three sizes).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from rlanything_core.advantages import integrated_step_reward, standardize_per_step
from rlanything_core.rewards import consistency_targets, standardize_votes
from rlanything_core.testing import plain
from rlanything_core.types import StepBatch

M = 3
MAX_GROUP = 8
MAX_STEPS = 40
P_UNPARSEABLE = 0.1
TOL = 1e-5


def make_batch(num_votes: int, seed: int, dtype: torch.dtype = torch.float32) -> StepBatch:
    """A ragged batch with about ``num_votes`` requested votes."""
    gen = torch.Generator().manual_seed(seed)
    num_rollouts = max(1, round(num_votes / (M * (1 + MAX_STEPS) / 2)))
    sizes = torch.randint(1, MAX_GROUP + 1, (num_rollouts,), generator=gen)
    group_index = torch.repeat_interleave(torch.arange(num_rollouts), sizes)[:num_rollouts]
    group_index = group_index[torch.randperm(num_rollouts, generator=gen)] * 7 + 3  # shuffled, sparse ids
    win_rate = torch.rand(int(group_index.max()) + 1, generator=gen)
    outcome = torch.where(torch.rand(num_rollouts, generator=gen) < win_rate[group_index], 1.0, -1.0).to(dtype)
    lengths = torch.randint(1, MAX_STEPS + 1, (num_rollouts,), generator=gen)
    step_mask = torch.arange(MAX_STEPS).unsqueeze(0) < lengths.unsqueeze(1)
    vote_mask = step_mask.unsqueeze(-1).expand(num_rollouts, MAX_STEPS, M).clone()
    vote_valid = vote_mask & (torch.rand(num_rollouts, MAX_STEPS, M, generator=gen) >= P_UNPARSEABLE)
    # judges lean towards the outcome, so steps and votes are not all noise
    agree = torch.rand(num_rollouts, MAX_STEPS, M, generator=gen) < 0.7
    signs = torch.where(agree, outcome.view(-1, 1, 1), -outcome.view(-1, 1, 1))
    votes = torch.where(vote_valid, signs, torch.tensor(float("nan"), dtype=dtype))
    return StepBatch(outcome, step_mask, group_index, votes, vote_mask, vote_valid)


def vectorized(batch: StepBatch) -> tuple[torch.Tensor, torch.Tensor]:
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    reward = integrated_step_reward(batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid)
    advantages = standardize_per_step(reward, batch.step_mask, batch.group_index)
    targets = consistency_targets(reward, batch.votes, batch.vote_mask, batch.vote_valid)
    return advantages, standardize_votes(targets, batch.vote_mask)


def reference(pb: plain.PlainBatch) -> tuple[list[list[float]], list[list[list[float]]]]:
    reward = plain.integrated_step_reward(pb, lam=1.0)
    advantages = plain.standardize_per_step(reward, pb.group)
    targets = plain.consistency_targets(reward, pb.votes)
    return advantages, plain.standardize_votes(targets)


def time_vectorized(batch: StepBatch, repeats: int) -> tuple[float, tuple[torch.Tensor, torch.Tensor]]:
    out = vectorized(batch)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = vectorized(batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: as is)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, m={M}, groups 1..{MAX_GROUP}, "
        f"steps 1..{MAX_STEPS}, unparseable {P_UNPARSEABLE:.0%}, float32, seed {args.seed}"
    )
    print(f"{'votes':>10} {'rollouts':>9} {'vectorized s':>13} {'plain s':>10} {'speedup':>9} {'max |diff|':>11}")
    rows = {}
    all_equal = True
    for size in args.sizes:
        batch = make_batch(size, args.seed + size)
        assert batch.vote_mask is not None
        pb = plain.from_step_batch(batch)  # nested lists, built outside the timing
        vec_s, (adv, z) = time_vectorized(batch, args.repeats)
        start = time.perf_counter()
        ref_adv, ref_z = reference(pb)
        plain_s = time.perf_counter() - start
        diff = max(
            float((adv.double() - plain.steps_to_grid(ref_adv, batch.max_steps)).abs().max()),
            float((z.double() - plain.votes_to_grid(ref_z, batch.vote_mask)).abs().max()),
        )
        equal = diff <= TOL and bool(torch.isfinite(adv).all() and torch.isfinite(z).all())
        all_equal &= equal
        rows[size] = (vec_s, plain_s)
        votes = int(batch.vote_mask.sum())
        print(
            f"{votes:>10} {batch.num_rollouts:>9} {vec_s:>13.4f} {plain_s:>10.3f} {plain_s / vec_s:>9.1f} {diff:>11.2e}"
        )
    big, mid = max(rows), sorted(rows)[-2] if len(rows) > 1 else max(rows)
    speedup = rows[big][1] / rows[big][0]
    scaling = rows[big][0] / rows[mid][0]
    print(f"speedup_1M={speedup:.1f} scaling_10x={scaling:.2f} equal={'true' if all_equal else 'false'}")


if __name__ == "__main__":
    main()
