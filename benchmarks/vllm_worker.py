"""One side of the side-by-side generation benchmark, in its own process, and the driver's handle on it.

:mod:`benchmarks.vllm_generation` starts one worker per backend (vLLM's CPU build lives in its own
interpreter, ``.venv-vllm``; the transformers side runs in this one, so both pay the same process overheads)::

    python -m benchmarks.vllm_worker {transformers,vllm} --model DIR --prompts ids.json \\
        --max-new-tokens N --threads N [--dtype float32] [--vllm-mode compiled|eager]

A worker loads its model (timed: ``start_s``, for vLLM the engine start), runs the whole batch once untimed as a
warm-up (``first_call_s``: one-off compilation, allocator growth, kernel selection), prints a ``ready`` message, then
answers one timed round per ``run`` line on stdin until EOF. Messages are JSON lines on stdout marked with a tag (vLLM
logs to stdout too). vLLM's prefix cache is cleared before every round, so no round finds the batch already cached
from the one before (prompts of one group sharing a prefix inside a batch is realistic and stays).
"""

from __future__ import annotations

import argparse
import collections
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rlanything_core.generation.types import GenerationBackend, SamplingParams

__all__ = ["BACKENDS", "WorkerProcess", "bench_params", "main"]

BACKENDS = ("transformers", "vllm")
_TAG = "@@bench "


def bench_params(max_new_tokens: int) -> SamplingParams:
    """The sampling settings both sides run with.

    Temperature 1, top-p 1, per-prompt seeds, EOS ignored so every prompt generates exactly ``max_new_tokens`` (both
    backends always return per-token log-probs).
    """
    return SamplingParams(max_new_tokens=max_new_tokens, temperature=1.0, top_p=1.0, seed=0, ignore_eos=True)


# ------------------------------------------------------------------ driver side


class WorkerProcess:
    """A running worker: send ``run`` lines, receive its messages (other output is kept as a tail for errors).

    Args:
        name: the backend, for messages and the log file name.
        cmd: the worker's command line.
        env: its environment.
        cwd: its working directory.
        timeout_s: limit for any one answer (start-up and warm-up included).
        log_dir: where to copy its whole output (``<name>.log``), or ``None``.
    """

    def __init__(
        self, name: str, cmd: Sequence[str], env: Mapping[str, str], cwd: str, timeout_s: float, log_dir: Path | None
    ) -> None:
        self.name, self.timeout_s = name, timeout_s
        self._log = open(log_dir / f"{name}.log", "w") if log_dir is not None else None  # noqa: SIM115
        self.proc = subprocess.Popen(
            list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(env), cwd=cwd,
        )
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        # a reader thread, so that a worker that logs a lot never blocks on a full pipe while we wait on the other one
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: TextIO | None) -> None:
        assert stream is not None
        for line in stream:
            if self._log is not None:
                self._log.write(line)
                self._log.flush()
            if line.startswith(_TAG):
                self._messages.put(json.loads(line[len(_TAG) :]))
            else:
                self._tail.append(line.rstrip())
        self._messages.put(None)  # EOF: the worker exited

    def receive(self) -> dict[str, Any]:
        """The worker's next message.

        Raises:
            RuntimeError: it exited (the message holds the tail of its output) or did not answer in ``timeout_s``.
        """
        try:
            message = self._messages.get(timeout=self.timeout_s)
        except queue.Empty:
            self.close()
            raise RuntimeError(f"{self.name} worker: no answer in {self.timeout_s:.0f} s") from None
        if message is None:
            self.proc.wait()
            output = "\n".join(self._tail)
            raise RuntimeError(f"{self.name} worker exited (rc={self.proc.returncode}):\n{output}")
        return message

    def run_round(self) -> dict[str, Any]:
        """Ask for one timed round; its timings (``seconds``, ``cpu_seconds``, prompt and generated token counts)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self.receive()

    def close(self) -> None:
        """End the worker (EOF on its stdin ends its loop; killed if it does not exit within a minute)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self._log is not None:
            self._log.close()


# ------------------------------------------------------------------ worker side


def _load_backend(
    name: str, model: str, dtype: str, threads: int, compile_vllm: bool
) -> tuple[GenerationBackend, Callable[[], Any] | None]:
    """The backend, and a hook to call before each timed round (``None`` when there is nothing to reset)."""
    import torch

    if name == "transformers":
        from rlanything_core.generation.transformers_backend import TransformersBackend
        from rlanything_core.models.smollm2 import load_smollm2

        torch.set_num_threads(threads)
        hf_model, tokenizer = load_smollm2(dtype=getattr(torch, dtype), cache_dir=model)
        return TransformersBackend(hf_model, tokenizer, batch_size=1 << 30), None  # one batch, as vLLM schedules it
    from rlanything_core.generation.vllm_backend import VLLMBackend

    backend = VLLMBackend(model, dtype=dtype, enforce_eager=not compile_vllm)
    return backend, backend.llm.reset_prefix_cache


def _serve(args: argparse.Namespace) -> None:
    prompt_ids = json.loads(Path(args.prompts).read_text())
    params = bench_params(args.max_new_tokens)
    start = time.perf_counter()
    backend, before_round = _load_backend(args.backend, args.model, args.dtype, args.threads,
                                          args.vllm_mode == "compiled")
    start_s = time.perf_counter() - start

    def timed_round() -> dict[str, Any]:
        if before_round is not None:
            before_round()
        wall, cpu = time.perf_counter(), time.process_time()
        generations = backend.generate(prompt_ids, params)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {
            "seconds": wall,
            "cpu_seconds": cpu,  # all threads of this process (VLLMBackend keeps the engine in-process)
            "prompts": len(generations),
            "prompt_tokens": sum(len(g.prompt_token_ids) for g in generations),
            "generated_tokens": sum(len(g.token_ids) for g in generations),
        }

    first = timed_round()
    import torch

    _emit({"event": "ready", "start_s": start_s, "first_call_s": first["seconds"],
           "torch_threads": torch.get_num_threads()})
    for line in sys.stdin:
        if line.strip() != "run":
            break
        _emit(timed_round())


def _emit(message: Mapping[str, Any]) -> None:
    print(_TAG + json.dumps(dict(message)), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve as one side of the benchmark (the driver in :mod:`~benchmarks.vllm_generation` starts it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("backend", choices=BACKENDS)
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument("--prompts", required=True, help="JSON file: a list of token-id lists")
    parser.add_argument("--max-new-tokens", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True, help="torch threads (the HF side; vLLM: OMP_NUM_THREADS)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--vllm-mode", choices=("compiled", "eager"), default="compiled")
    _serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()
