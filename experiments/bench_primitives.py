"""Benchmark: the fused advantage + consistency entry point vs the plain-Python reference, at 10k / 100k / 1M votes.

Pipeline (same semantics on both sides): mean votes -> integrated step reward R = O + lam * mean votes -> per-(task,
step index) standardization -> consistency targets R * vote (format penalty for unparseable votes) -> per-step vote
standardization. The vectorized side is :func:`rlanything_core.advantages.fused.integrated_advantages_and_consistency`
(validation included); the composition of the public functions is timed too, for reference. Batches are seeded and
ragged: task groups of 1..8 rollouts, trajectories of 1..40 steps, m = 3 votes per step with ~10% unparseable, NaN at
padding, float32. The plain side takes nested lists built before timing.

Timing: the fused side is the median of ``--repeats`` runs after one warm-up, the plain side the median of
``--plain-repeats`` runs, each after a full ``gc.collect()``. The plain side runs twice: as the interpreter runs it
(cyclic GC on: the headline ``speedup``) and with the GC off inside the timed call (as ``timeit`` does). Its nested
lists hold ~1M floats in ~350k lists and it allocates ~700k more lists, so at 1M votes CPython's generational GC takes
more than half of its time (3.4 s vs 1.3 s measured); both figures are printed.

Threads: ``--threads 1`` by default. The target machine has 2 cores shared with other jobs; every torch op is an
OpenMP parallel region, and when the other core is busy the second thread makes each of the ~60 ops wait for a
descheduled peer (measured: the fused call at 1M went from ~25 ms with 1 thread to 2-10x slower with 2 under load).
On an idle machine ``--threads 2`` is about as fast; pass ``--threads 0`` to leave torch's setting as it is.

Run: ``python experiments/bench_primitives.py [--threads N]``. The last line is
``speedup_1M=<float> scaling_10x=<float> equal=<true|false>`` (speedup = plain / fused at the largest size; scaling =
fused time at 1M / at 100k; equal = fused == plain within 1e-5 at every size, both outputs).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import torch

from rlanything_core.advantages import integrated_step_reward, standardize_per_step
from rlanything_core.advantages.fused import batch_advantages_and_consistency
from rlanything_core.rewards import consistency_targets, standardize_votes
from rlanything_core.testing import plain
from rlanything_core.types import StepBatch

M = 3
MAX_GROUP = 8
MAX_STEPS = 40
P_UNPARSEABLE = 0.1
TOL = 1e-5
T = TypeVar("T")


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
    """The fused, validated entry point."""
    return tuple(batch_advantages_and_consistency(batch))  # type: ignore[return-value]


def composed(batch: StepBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The same maths through the public functions one by one (each validates its inputs)."""
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


def timed(fn: Callable[[], T], repeats: int, *, warm_up: bool, gc_on: bool = True) -> tuple[float, T]:
    """Median wall time of ``repeats`` calls (after one untimed call if ``warm_up``); a full collection before each.

    ``gc_on=False`` turns the cyclic garbage collector off inside the timed call, as ``timeit`` does.
    """
    out = fn() if warm_up else None
    times = []
    for _ in range(repeats):
        gc.collect()
        if not gc_on:
            gc.disable()
        try:
            start = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    assert out is not None
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=9, help="timed runs of each vectorized side (median)")
    parser.add_argument("--plain-repeats", type=int, default=3, help="timed runs of the plain side (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads; 0 = leave as is (default 1)")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, m={M}, groups 1..{MAX_GROUP}, "
        f"steps 1..{MAX_STEPS}, unparseable {P_UNPARSEABLE:.0%}, float32, seed {args.seed}, load {load()}"
    )
    print(
        f"{'votes':>10} {'rollouts':>9} {'fused s':>9} {'composed s':>11} {'plain s':>9} {'speedup':>8} "
        f"{'plain s (gc off)':>17} {'speedup':>8} {'max |diff|':>11}"
    )
    rows = {}
    all_equal = True
    for size in args.sizes:
        batch = make_batch(size, args.seed + size)
        assert batch.vote_mask is not None
        pb = plain.from_step_batch(batch)  # nested lists, built outside the timing
        fused_s, (adv, z) = timed(partial(vectorized, batch), args.repeats, warm_up=True)
        composed_s, _ = timed(partial(composed, batch), max(1, args.repeats // 2), warm_up=True)
        plain_s, (ref_adv, ref_z) = timed(partial(reference, pb), args.plain_repeats, warm_up=False)
        plain_nogc_s, _ = timed(partial(reference, pb), args.plain_repeats, warm_up=False, gc_on=False)
        diff = max(
            float((adv.double() - plain.steps_to_grid(ref_adv, batch.max_steps)).abs().max()),
            float((z.double() - plain.votes_to_grid(ref_z, batch.vote_mask)).abs().max()),
        )
        equal = diff <= TOL and bool(torch.isfinite(adv).all() and torch.isfinite(z).all())
        all_equal &= equal
        rows[size] = (fused_s, plain_s, plain_nogc_s)
        votes = int(batch.vote_mask.sum())
        print(
            f"{votes:>10} {batch.num_rollouts:>9} {fused_s:>9.4f} {composed_s:>11.4f} {plain_s:>9.3f} "
            f"{plain_s / fused_s:>8.1f} {plain_nogc_s:>17.3f} {plain_nogc_s / fused_s:>8.1f} {diff:>11.2e}"
        )
    big, mid = max(rows), sorted(rows)[-2] if len(rows) > 1 else max(rows)
    speedup = rows[big][1] / rows[big][0]
    scaling = rows[big][0] / rows[mid][0]
    print(f"load after: {load()}; speedup_1M with the plain side's GC off: {rows[big][2] / rows[big][0]:.1f}")
    print(f"speedup_1M={speedup:.1f} scaling_10x={scaling:.2f} equal={'true' if all_equal else 'false'}")


def load() -> str:
    """1/5/15-minute load averages (the machine is shared: a speedup means little without them)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


if __name__ == "__main__":
    main()
