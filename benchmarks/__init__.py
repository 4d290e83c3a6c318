"""Speed benchmarks of rlanything (outside the library package): scripts that print their figures.

Run them from the repository root as modules, e.g. ``python -m benchmarks.bench_rollouts``:

- :mod:`benchmarks.bench_rollouts`: ALFWorld parallel stepping, sandbox throughput (:mod:`.sandbox_throughput`),
  vLLM vs transformers generation (:mod:`.vllm_generation`, one :mod:`.vllm_worker` process per backend);
- :mod:`benchmarks.bench_train`: training tokens/s of length-packed micro-batches;
- :mod:`benchmarks.bench_miniwob`, :mod:`benchmarks.bench_desktop`: per-step costs of the GUI settings;

The advantage and consistency maths has one implementation, the library's (plus the plain-Python reference in
:mod:`rlanything_core.testing.plain`): a fused numba pass measured 200x faster on 1M votes, but at a loop's size the
library's integrator takes a few milliseconds (3.1 ms for 64 rollouts x 40 steps x 3 votes on a loaded 2-core
machine) of an iteration whose model forwards take seconds, so the fused pass left the repository.
"""
