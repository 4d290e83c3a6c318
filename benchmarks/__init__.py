"""Speed benchmarks of rlanything (outside the library package): scripts that print their figures.

Run them from the repository root as modules, e.g. ``python -m benchmarks.bench_rollouts``:

- :mod:`benchmarks.bench_rollouts`: ALFWorld parallel stepping, sandbox throughput (:mod:`.sandbox_throughput`),
  vLLM vs transformers generation (:mod:`.vllm_generation`, one :mod:`.vllm_worker` process per backend);
- :mod:`benchmarks.bench_train`: training tokens/s of length-packed micro-batches;
- :mod:`benchmarks.bench_miniwob`, :mod:`benchmarks.bench_desktop`: per-step costs of the GUI settings;
- :mod:`benchmarks.fused_advantages`: a fused (numba / torch) advantage + consistency pass against the composition of
  the library's functions and the plain-Python reference (``python -m benchmarks.fused_advantages.bench``). The
  training loop composes the library's functions; the fused pass lives here as a measured alternative.
"""
