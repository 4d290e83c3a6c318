"""Benchmark: the fused advantage + consistency entry point vs the plain-Python reference, at 10k / 100k / 1M votes.

Pipeline (same semantics on both sides): mean votes -> integrated step reward R = O + lam * mean votes -> per-(task,
step index) standardization -> consistency targets R * vote (format penalty for unparseable votes) -> per-step vote
standardization. The vectorized side is :func:`benchmarks.fused_advantages.fused.integrated_advantages_and_consistency`
(validation included) with ``--backend`` (default ``auto``: the numba-compiled loops when numba is installed, ``pip
install 'rlanything[fast]'``, else the torch path; the second line says which ran); the composition of the public
functions is timed too, for reference. Batches are seeded and ragged: task groups of 1..8 rollouts, trajectories of
1..40 steps, m = 3 votes per step with ~10% unparseable, NaN at padding, float32. The plain side takes nested lists
built before timing.

Timing: after one warm-up, ``--rounds`` interleaved rounds (``--repeats`` fused runs, one composed, one plain with GC
on, one plain with GC off per round), so that a change of the shared machine's load hits every side alike; medians of
wall-clock time (the headline) and of process CPU time (which leaves out the time the process waited for a core),
each run after a full ``gc.collect()``. The plain side runs twice: as the interpreter runs it
(cyclic GC on: the headline ``speedup``) and with the GC off inside the timed call (as ``timeit`` does). Its input
holds ~1M floats in ~350k lists and it allocates ~700k more lists, so CPython's generational GC is a large part of
its time at 1M votes (measured 1.8 s with GC vs 1.0 s without, after a full collection; 3.4 s when earlier garbage is
left uncollected, as the previous version of this script timed it); both figures are printed.

Threads: ``--threads 1`` by default. The target machine has 2 cores shared with other jobs; every torch op is an
OpenMP parallel region, and when the other core is busy the second thread makes each of the torch path's ~600 ops
wait for a descheduled peer (measured at load ~5: the torch path at 1M takes ~22 ms with 1 thread and 50-150 ms with
2). The numba path is single-threaded whatever this says: the kernels are not parallelized (on 2 shared cores a
second thread would wait for a descheduled peer as torch's do) and the grid-sized steps around them run in numpy.
``--threads 2`` shows the figure with both threads; ``--threads 0`` leaves torch's setting as it is.

Run: ``python -m benchmarks.fused_advantages.bench [--threads N] [--backend auto|numba|torch]``. The last line is
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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from benchmarks.fused_advantages.fused import Backend, batch_advantages_and_consistency, kernels_available
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


def vectorized(batch: StepBatch, backend: Backend = "auto") -> tuple[torch.Tensor, torch.Tensor]:
    """The fused, validated entry point."""
    return tuple(batch_advantages_and_consistency(batch, backend=backend))  # type: ignore[return-value]


def backend_name(backend: Backend) -> str:
    """What ``backend`` runs here (``numba`` without numba raises at the first call)."""
    if backend == "torch":
        return "torch"
    if not kernels_available():
        return "torch (numba not installed)"
    import numba

    return f"numba {numba.__version__} (compiled loops)"


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


@dataclass
class Side:
    """One timed side: what to call, how many calls per round, whether the cyclic GC runs during the call."""

    fn: Callable[[], Any]
    per_round: int = 1
    gc_on: bool = True
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    out: Any = None

    def run(self) -> None:
        gc.collect()
        if not self.gc_on:
            gc.disable()
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            self.out = self.fn()
            self.cpu.append(time.process_time() - cpu)
            self.wall.append(time.perf_counter() - wall)
        finally:
            gc.enable()

    @property
    def median(self) -> tuple[float, float]:
        """Median wall and process-CPU seconds."""
        return statistics.median(self.wall), statistics.median(self.cpu)


def measure(sides: dict[str, Side], rounds: int) -> None:
    """Interleave the sides round by round, so that a change of the machine's load hits all of them alike."""
    for _ in range(rounds):
        for side in sides.values():
            for _ in range(side.per_round):
                side.run()


def measure_size(size: int, args: argparse.Namespace) -> tuple[tuple[float, float, float, float, float], bool]:
    """Time the four sides on one batch of ``size`` votes and print its row.

    Returns:
        ``((fused_s, plain_s, plain_gc_off_s, cpu speedup, cpu speedup GC off), whether fused equals plain)``.
    """
    batch = make_batch(size, args.seed + size)
    assert batch.vote_mask is not None
    pb = plain.from_step_batch(batch)  # nested lists, built outside the timing
    sides = {
        "fused": Side(partial(vectorized, batch, args.backend), per_round=args.repeats),
        "composed": Side(partial(composed, batch)),
        "plain": Side(partial(reference, pb)),
        "plain_gc_off": Side(partial(reference, pb), gc_on=False),
    }
    vectorized(batch, args.backend), composed(batch)  # warm-up (the first call compiles or loads the kernels)
    measure(sides, args.rounds)
    (fused_s, fused_cpu), (composed_s, _) = sides["fused"].median, sides["composed"].median
    (plain_s, plain_cpu), (nogc_s, nogc_cpu) = sides["plain"].median, sides["plain_gc_off"].median
    adv, z = sides["fused"].out
    ref_adv, ref_z = sides["plain"].out
    diff = max(
        float((adv.double() - plain.steps_to_grid(ref_adv, batch.max_steps)).abs().max()),
        float((z.double() - plain.votes_to_grid(ref_z, batch.vote_mask)).abs().max()),
    )
    equal = diff <= TOL and bool(torch.isfinite(adv).all() and torch.isfinite(z).all())
    print(
        f"{int(batch.vote_mask.sum()):>10} {batch.num_rollouts:>9} {fused_s * 1e3:>9.2f} {composed_s * 1e3:>12.2f} "
        f"{plain_s:>8.3f} {nogc_s:>7.3f} {plain_s / fused_s:>8.1f} {nogc_s / fused_s:>7.1f} "
        f"{plain_cpu / fused_cpu:>6.1f} {nogc_cpu / fused_cpu:>7.1f} {diff:>11.2e}"
    )
    return (fused_s, plain_s, nogc_s, plain_cpu / fused_cpu, nogc_cpu / fused_cpu), equal


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (plain side: one run per round)")
    parser.add_argument("--repeats", type=int, default=3, help="fused runs per round (median over all rounds)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads; 0 = leave as is (default 1)")
    parser.add_argument("--backend", choices=["auto", "numba", "torch"], default="auto", help="fused implementation")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, m={M}, groups 1..{MAX_GROUP}, "
        f"steps 1..{MAX_STEPS}, unparseable {P_UNPARSEABLE:.0%}, float32, seed {args.seed}, load {load()}"
    )
    print(f"fused backend: {backend_name(args.backend)}")
    print("wall-clock medians; speedup = plain / fused (GC on | GC off); cpu = the same ratio in process CPU time")
    print(
        f"{'votes':>10} {'rollouts':>9} {'fused ms':>9} {'composed ms':>12} {'plain s':>8} {'gc off':>7} "
        f"{'speedup':>8} {'gc off':>7} {'cpu':>6} {'gc off':>7} {'max |diff|':>11}"
    )
    results = {}
    all_equal = True
    for size in args.sizes:
        results[size], equal = measure_size(size, args)
        all_equal &= equal
    big, mid = max(results), sorted(results)[-2] if len(results) > 1 else max(results)
    fused_big, plain_big, nogc_big, cpu_big, cpu_nogc_big = results[big]
    print(
        f"load after: {load()}; at the largest size: speedup with the plain side's GC off {nogc_big / fused_big:.1f}, "
        f"in CPU time {cpu_big:.1f} (GC off {cpu_nogc_big:.1f})"
    )
    speedup = plain_big / fused_big
    scaling = fused_big / results[mid][0]
    print(f"speedup_1M={speedup:.1f} scaling_10x={scaling:.2f} equal={'true' if all_equal else 'false'}")


def load() -> str:
    """1/5/15-minute load averages (the machine is shared: a speedup means little without them)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


if __name__ == "__main__":
    main()
