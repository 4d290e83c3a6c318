"""Generation with a transformers causal LM: batched, left-padded, KV-cached sampling with per-token log-probs.

The loop is written out (not ``model.generate``) so that every detail the RL maths depends on is explicit: the
returned log-probs are ``log_softmax`` of the raw logits at temperature 1.0 gathered at the sampled tokens (what the
trainer recomputes for the PPO ratio), each prompt samples from its own seeded generator (results do not depend on
batch size), finished rows leave the batch (their KV cache rows are dropped), and EOS stays in ``token_ids``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from transformers.cache_utils import DynamicLayer

from rlanything_core._validation import check_positive_int
from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.sampling import find_stop, prompt_seeds, sample_next
from rlanything_core.generation.types import FinishReason, Generation, Prompt, SamplingParams

__all__ = ["TransformersBackend"]


def _as_id_list(value: object) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, Sequence):
        return [int(v) for v in value]
    return []


class _PreallocatedLayer(DynamicLayer):
    """A full-attention KV cache layer whose keys/values are views into buffers sized for the whole generation.

    ``DynamicLayer`` appends each decode step with ``torch.cat``, copying every layer's whole cache once per generated
    token: with a batch of agent prompts (~250 tokens) that copy cost more than the model's matmuls. Here a step writes
    its one position in place. Built from a filled ``DynamicLayer`` after the prefill; a buffer grows (doubling) only
    if a caller goes past ``capacity``. Only what :meth:`TransformersBackend.generate` uses is supported: ``update``,
    ``batch_select_indices`` / ``reorder_cache``; the other edits raise rather than leave the buffers out of step.
    """

    def __init__(self, filled: DynamicLayer, capacity: int) -> None:
        super().__init__()
        keys, values = filled.keys, filled.values
        if keys is None or values is None:
            raise ValueError("filled: expected an initialized DynamicLayer")
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self._length, self._capacity = keys.shape[-2], max(capacity, keys.shape[-2])
        self._key_buffer, self._value_buffer = self._buffer(keys), self._buffer(values)
        self._publish()

    def _buffer(self, states: Tensor) -> Tensor:
        """A ``capacity``-long buffer holding ``states`` at its start (the rest is left unwritten, and never copied)."""
        buffer = states.new_empty((*states.shape[:-2], self._capacity, states.shape[-1]))
        buffer[..., : states.shape[-2], :] = states
        return buffer

    def _filled(self) -> tuple[Tensor, Tensor]:
        """Views of the written part of the buffers."""
        return self._key_buffer[..., : self._length, :], self._value_buffer[..., : self._length, :]

    def _publish(self) -> tuple[Tensor, Tensor]:
        """Point ``keys`` / ``values`` (what attention and ``get_seq_length`` read) at the written part."""
        keys, values = self.keys, self.values = self._filled()
        return keys, values

    def update(self, key_states: Tensor, value_states: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        end = self._length + key_states.shape[-2]
        if end > self._capacity:
            self._capacity = 2 * end
            keys, values = self._filled()
            self._key_buffer, self._value_buffer = self._buffer(keys), self._buffer(values)
        self._key_buffer[..., self._length : end, :] = key_states
        self._value_buffer[..., self._length : end, :] = value_states
        self._length = end
        return self._publish()

    def batch_select_indices(self, indices: Tensor) -> None:
        keys, values = self._filled()
        self._key_buffer, self._value_buffer = self._buffer(keys[indices]), self._buffer(values[indices])
        self._publish()

    def reorder_cache(self, beam_idx: Tensor) -> None:
        self.batch_select_indices(beam_idx.to(self.device))

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("_PreallocatedLayer: crop is not supported (the sampling loop never crops)")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("_PreallocatedLayer: batch_repeat_interleave is not supported")

    def reset(self) -> None:
        raise NotImplementedError("_PreallocatedLayer: reset is not supported (the cache lives for one batch)")


def _preallocate(cache: Any, capacity: int) -> None:
    """Swap each filled plain ``DynamicLayer`` of ``cache`` (after the prefill) for a :class:`_PreallocatedLayer`.

    Other layer kinds (sliding windows, static, quantized, linear attention, ...) keep their own update rule.
    """
    layers = getattr(cache, "layers", None)
    if layers is None:
        return
    for i, layer in enumerate(layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys is not None and layer.keys.numel():
            layers[i] = _PreallocatedLayer(layer, capacity)


def _left_padded(prompts: list[list[int]], pad_id: int, device: Any) -> tuple[Tensor, Tensor]:
    """``(input_ids, attention_mask)``, both ``(B, P)`` long on ``device``: the prompts left-padded.

    Right-aligned prompts put every row's next token at the same position, as batched decoding needs.
    """
    batch, width = len(prompts), max(len(p) for p in prompts)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for b, ids in enumerate(prompts):
        input_ids[b, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        mask[b, width - len(ids) :] = 1
    return input_ids.to(device), mask.to(device)


class TransformersBackend:
    """A :class:`~rlanything_core.generation.types.GenerationBackend` over a transformers causal LM.

    Args:
        model: a causal LM (``LlamaForCausalLM`` etc.). Pass the trainer's own module to share weights (then no
            ``update_weights`` call is needed), or call :meth:`update_weights` with its ``state_dict``.
        tokenizer: the matching tokenizer, with a chat template.
        batch_size: prompts per forward batch (prompts are sorted by length, so batches pad little).
        max_model_len: context length; default the model's ``max_position_embeddings``. A prompt that does not fit
            returns ``FinishReason.PROMPT_TOO_LONG`` and no tokens; otherwise generation is capped by the context.
        stop_token_ids: tokens that end a generation; default the tokenizer's EOS plus the model's (generation)
            config EOS ids.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int = 8,
        max_model_len: int | None = None,
        stop_token_ids: Sequence[int] | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = check_positive_int("batch_size", batch_size)
        config_len = getattr(model.config, "max_position_embeddings", None)
        self.max_model_len = check_positive_int("max_model_len", max_model_len or config_len or 2048)
        if stop_token_ids is None:
            ids = set(_as_id_list(tokenizer.eos_token_id)) | set(_as_id_list(model.config.eos_token_id))
            generation_config = getattr(model, "generation_config", None)
            if generation_config is not None:
                ids |= set(_as_id_list(generation_config.eos_token_id))
            stop_token_ids = sorted(ids)
        if not stop_token_ids:
            raise ValueError("stop_token_ids: expected at least one end-of-sequence id (none found on the tokenizer)")
        self.stop_token_ids = frozenset(int(i) for i in stop_token_ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.stop_token_ids)
        self.pad_token_id = int(pad)

    @property
    def device(self) -> torch.device:
        """Where the model's parameters live."""
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------ generation
    def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams, *, seeds: Sequence[int] | None = None
    ) -> list[Generation]:
        """Generate one completion per prompt (see :class:`~rlanything_core.generation.types.Generation`).

        Args:
            prompts: chats (rendered with the chat template) or prompt token ids.
            params: sampling parameters.
            seeds: each prompt's sampling seed (default: derived from ``(params.seed, index)``, see
                :func:`~rlanything_core.generation.sampling.prompt_seeds`).

        Returns:
            One record per prompt, in input order.
        """
        if not isinstance(params, SamplingParams):
            raise ValueError(f"params: expected SamplingParams, got {type(params).__name__}")
        row_seeds = prompt_seeds(params.seed, len(prompts), seeds)
        prompt_ids = [render_prompt(self.tokenizer, p) for p in prompts]
        results: list[Generation | None] = [None] * len(prompt_ids)
        runnable = []
        for i, ids in enumerate(prompt_ids):
            if len(ids) >= self.max_model_len:
                results[i] = Generation(ids, [], [], "", FinishReason.PROMPT_TOO_LONG)
            else:
                runnable.append(i)
        runnable.sort(key=lambda i: -len(prompt_ids[i]))
        for start in range(0, len(runnable), self.batch_size):
            rows = runnable[start : start + self.batch_size]
            batch = self._generate_batch([prompt_ids[i] for i in rows], [row_seeds[i] for i in rows], params)
            for i, gen in zip(rows, batch):
                results[i] = gen
        return [r for r in results if r is not None]

    @torch.inference_mode()
    def _generate_batch(self, prompts: list[list[int]], seeds: list[int], params: SamplingParams) -> list[Generation]:
        batch = len(prompts)
        input_ids, mask = _left_padded(prompts, self.pad_token_id, self.device)
        width = input_ids.shape[1]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        generators = [torch.Generator().manual_seed(s) for s in seeds]
        budget = [min(params.max_new_tokens, self.max_model_len - len(p)) for p in prompts]
        tokens: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        finish = [FinishReason.LENGTH] * batch
        stop_at: list[int | None] = [None] * batch

        # Only the last position's logits are sampled from: computing the vocabulary head over the whole prompt would
        # cost more than the decode steps for long prompts (and a (B, P, V) float tensor).
        out = self.model(
            input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
        )
        cache, logits = out.past_key_values, out.logits[:, -1, :]
        _preallocate(cache, width + max(budget))
        active = list(range(batch))  # batch rows still generating, in cache order
        while active:
            token_logp = torch.log_softmax(logits.float(), dim=-1)
            chosen = sample_next(
                logits, temperature=params.temperature, top_p=params.top_p, generators=[generators[b] for b in active]
            )
            chosen_logp = token_logp.gather(-1, chosen[:, None])[:, 0].tolist()
            still = []
            for k, b in enumerate(active):
                token = int(chosen[k])
                tokens[b].append(token)
                logprobs[b].append(float(chosen_logp[k]))
                if not params.ignore_eos and token in self.stop_token_ids:
                    finish[b] = FinishReason.EOS
                elif params.stop and (cut := find_stop(self._decode(tokens[b]), params.stop)) is not None:
                    finish[b], stop_at[b] = FinishReason.STOP_STRING, cut
                elif len(tokens[b]) < budget[b]:
                    still.append(k)
            if not still:
                break
            if len(still) < len(active):
                keep = torch.tensor(still, dtype=torch.long, device=self.device)
                cache.batch_select_indices(keep)
                mask, positions, chosen = mask[keep], positions[keep], chosen[keep]
                active = [active[k] for k in still]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=-1)
            positions = positions[:, -1:] + 1
            out = self.model(
                input_ids=chosen[:, None], attention_mask=mask, position_ids=positions, past_key_values=cache,
                use_cache=True,
            )
            cache, logits = out.past_key_values, out.logits[:, -1, :]

        return [self._generation(prompts[b], tokens[b], logprobs[b], finish[b], stop_at[b]) for b in range(batch)]

    def _generation(
        self, prompt: list[int], tokens: list[int], logprobs: list[float], finish: FinishReason, stop_at: int | None
    ) -> Generation:
        """One row's ``Generation``: its text without the EOS token, or cut where a stop string begins."""
        if finish is FinishReason.EOS:
            text = self._decode(tokens[:-1])
        else:
            text = self._decode(tokens)
            if stop_at is not None:
                text = text[:stop_at]
        return Generation(list(prompt), tokens, logprobs, text, finish)

    def _decode(self, token_ids: list[int]) -> str:
        return str(self.tokenizer.decode(token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))

    # ------------------------------------------------------------------ scoring
    @torch.inference_mode()
    def score_continuations(
        self, prompt: Prompt, continuations: Sequence[str], *, append_eos: bool = True
    ) -> list[float]:
        """Sum log-likelihood of each continuation given the prompt (for choosing among admissible actions).

        The prompt is run once; its KV cache is shared by the continuations, which run in batches of ``batch_size``.

        Args:
            prompt: chat messages (rendered with the generation prompt) or prompt token ids, ``P`` tokens.
            continuations: candidate responses; each is tokenized on its own (``add_special_tokens=False``).
            append_eos: score ``continuation + EOS`` (the response is exactly this text), so a candidate that is a
                prefix of another ("go to desk 1" vs "go to desk 10") is not favoured just for being shorter.

        Returns:
            ``sum_t log p(c_t | prompt, c_<t)`` per continuation, at temperature 1.0.

        Raises:
            ValueError: empty ``continuations``, an empty continuation, or prompt + continuation past the context.
        """
        if isinstance(continuations, str) or len(continuations) == 0:
            raise ValueError("continuations: expected a non-empty list of strings")
        prompt_ids = render_prompt(self.tokenizer, prompt)
        eos = [self._eos_for_scoring()] if append_eos else []
        cont_ids = [list(self.tokenizer(c, add_special_tokens=False)["input_ids"]) + eos for c in continuations]
        for c, ids in zip(continuations, cont_ids):
            if not ids:
                raise ValueError(f"continuations: expected non-empty strings, got {c!r}")
            if len(prompt_ids) + len(ids) > self.max_model_len:
                raise ValueError(f"continuations: prompt + {c!r:.40} exceeds max_model_len {self.max_model_len}")
        prompt_t = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        # only the last position's logits are needed: the vocabulary-sized head is the main cost of a small model
        out = self.model(input_ids=prompt_t, use_cache=True, logits_to_keep=1)
        prompt_cache = out.past_key_values
        first_logp = torch.log_softmax(out.logits[0, -1, :].float(), dim=-1)  # (V,)
        scores: list[float] = []
        for start in range(0, len(cont_ids), self.batch_size):
            chunk = cont_ids[start : start + self.batch_size]
            scores.extend(self._score_chunk(len(prompt_ids), prompt_cache, first_logp, chunk))
        return scores

    def _score_chunk(
        self, prompt_len: int, prompt_cache: Any, first_logp: Tensor, chunk: list[list[int]]
    ) -> list[float]:
        n, width = len(chunk), max(len(c) for c in chunk)
        ids = torch.full((n, width), self.pad_token_id, dtype=torch.long, device=self.device)
        valid = torch.zeros((n, width), dtype=torch.bool, device=self.device)
        for k, c in enumerate(chunk):
            ids[k, : len(c)] = torch.tensor(c, dtype=torch.long)
            valid[k, : len(c)] = True
        cache = copy.deepcopy(prompt_cache)
        cache.batch_repeat_interleave(n)
        mask = torch.cat([valid.new_ones((n, prompt_len)), valid], dim=-1).long()
        positions = prompt_len + torch.arange(width, device=self.device).expand(n, width)
        logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache).logits
        # position t predicts token t+1; the prompt's last position predicts token 0.
        logp = torch.log_softmax(logits[:, :-1, :].float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]  # (n, W-1)
        logp = torch.where(valid[:, 1:], logp, torch.zeros_like(logp))
        total = first_logp[ids[:, 0]] + logp.sum(dim=-1)
        return [float(x) for x in total]

    def _eos_for_scoring(self) -> int:
        eos = self.tokenizer.eos_token_id
        return int(eos) if eos is not None else min(self.stop_token_ids)

    # ------------------------------------------------------------------ weights
    @torch.no_grad()
    def update_weights(self, named_tensors: Mapping[str, Any]) -> None:
        """Copy new weights into the model in place (strict: every parameter name must be present)."""
        self.model.load_state_dict(dict(named_tensors), strict=True)
