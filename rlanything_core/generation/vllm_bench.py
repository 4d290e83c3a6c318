"""Generated tokens/s of the vLLM and transformers backends on SmolLM2, side by side on the same prompts.

vLLM's CPU build lives in its own environment, so the vLLM half runs as a subprocess of that interpreter::

    .venv-vllm/bin/python -m rlanything_core.generation.vllm_bench --model DIR --prompts ids.json --max-new-tokens 32

which prints one JSON line (``generated_tokens``, ``seconds``, ``tokens_per_s``, ``tokens_per_cpu_s``,
``engine_start_s``). From the main environment, :func:`vllm_over_hf_tokens_per_s` renders the prompts, times the HF
backend in-process, runs the vLLM half, and returns the ratio (``None`` when no vLLM interpreter is found). Both
halves sample at temperature 1 with ``ignore_eos`` so they generate the same number of tokens; engine start-up and
model loading are not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlanything_core.generation.types import Prompt, SamplingParams

__all__ = ["BenchResult", "bench_tokens_per_s", "find_vllm_python", "main", "vllm_over_hf_tokens_per_s"]

VLLM_PYTHON_ENV_VAR = "RLANYTHING_VLLM_PYTHON"
_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class BenchResult:
    """Throughput of both backends on the same prompts, over the generate call only.

    ``*_tokens_per_s`` divide by wall time; ``*_tokens_per_cpu_s`` by the process's CPU time (all threads), a figure
    that moves less when other jobs share the cores.
    """

    hf_tokens_per_s: float
    vllm_tokens_per_s: float
    generated_tokens: int
    vllm_engine_start_s: float
    hf_tokens_per_cpu_s: float
    vllm_tokens_per_cpu_s: float

    @property
    def ratio(self) -> float:
        """VLLM tokens/s over HF tokens/s."""
        return self.vllm_tokens_per_s / self.hf_tokens_per_s


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


def _run_vllm_half(
    python: Path, model_dir: Path, prompt_ids: list[list[int]], max_new_tokens: int, dtype: str, timeout_s: float
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        prompts_file = Path(tmp) / "prompts.json"
        prompts_file.write_text(json.dumps(prompt_ids))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
        cmd = [str(python), "-m", "rlanything_core.generation.vllm_bench", "--model", str(model_dir),
               "--prompts", str(prompts_file), "--max-new-tokens", str(max_new_tokens), "--dtype", dtype]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=tmp)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"vLLM benchmark failed (rc={proc.returncode}): {proc.stderr[-2000:]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def bench_tokens_per_s(
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    *,
    vllm_python: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
    dtype: str = "float32",
    timeout_s: float = 900.0,
) -> BenchResult | None:
    """Time both backends on SmolLM2 over the same prompts; ``None`` when no vLLM interpreter is found.

    Args:
        prompts: chats or token ids (rendered once here, with the SmolLM2 tokenizer, for both backends).
        max_new_tokens: tokens generated per prompt (EOS ignored, so every prompt generates exactly this many).
        vllm_python: interpreter with vLLM (see :func:`find_vllm_python`).
        batch_size: HF backend batch size (default: all prompts in one batch, as vLLM schedules them).
        dtype: model dtype for both backends (``"float32"`` or ``"bfloat16"``).
        timeout_s: limit for the vLLM subprocess.
    """
    python = find_vllm_python(vllm_python)
    if python is None:
        return None
    import torch

    from rlanything_core.generation.prompts import render_prompt
    from rlanything_core.generation.transformers_backend import TransformersBackend
    from rlanything_core.models.smollm2 import load_smollm2, smollm2_path

    model, tokenizer = load_smollm2(dtype=getattr(torch, dtype))
    prompt_ids = [render_prompt(tokenizer, p) for p in prompts]
    backend = TransformersBackend(model, tokenizer, batch_size=batch_size or len(prompt_ids))
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=1.0, seed=0, ignore_eos=True)
    backend.generate(prompt_ids[:1], SamplingParams(max_new_tokens=2))  # warm-up, as for vLLM
    start, cpu_start = time.perf_counter(), time.process_time()
    generations = backend.generate(prompt_ids, params)
    hf_seconds, hf_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    hf_tokens = sum(len(g.token_ids) for g in generations)
    del model, backend
    vllm = _run_vllm_half(python, smollm2_path(), prompt_ids, max_new_tokens, dtype, timeout_s)
    return BenchResult(
        hf_tokens_per_s=hf_tokens / hf_seconds,
        vllm_tokens_per_s=float(vllm["tokens_per_s"]),
        generated_tokens=hf_tokens,
        vllm_engine_start_s=float(vllm["engine_start_s"]),
        hf_tokens_per_cpu_s=hf_tokens / hf_cpu,
        vllm_tokens_per_cpu_s=float(vllm["tokens_per_cpu_s"]),
    )


def vllm_over_hf_tokens_per_s(prompts: Sequence[Prompt], max_new_tokens: int, **kwargs: object) -> float | None:
    """Generated tokens/s of vLLM divided by that of the HF backend on SmolLM2 (``None`` when vLLM is absent).

    Keyword arguments go to :func:`bench_tokens_per_s`.
    """
    result = bench_tokens_per_s(prompts, max_new_tokens, **kwargs)  # type: ignore[arg-type]
    return None if result is None else result.ratio


def main(argv: Sequence[str] | None = None) -> None:
    """The vLLM half: generate from token-id prompts and print one JSON line of timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", required=True, help="JSON file: a list of token-id lists")
    parser.add_argument("--max-new-tokens", type=int, required=True)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args(argv)
    from rlanything_core.generation.vllm_backend import VLLMBackend

    prompt_ids = json.loads(Path(args.prompts).read_text())
    start = time.perf_counter()
    backend = VLLMBackend(args.model, dtype=args.dtype)
    engine_start = time.perf_counter() - start
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0, ignore_eos=True)
    backend.generate(prompt_ids[:1], SamplingParams(max_new_tokens=2))  # warm-up
    start, cpu_start = time.perf_counter(), time.process_time()
    generations = backend.generate(prompt_ids, params)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    tokens = sum(len(g.token_ids) for g in generations)
    print(json.dumps({"generated_tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
                      "tokens_per_cpu_s": tokens / cpu, "engine_start_s": engine_start}), flush=True)


if __name__ == "__main__":
    main()
