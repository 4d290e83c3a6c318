"""Supervised warm start: fit the policy to demonstrated responses (the expert's commands).

Gives a small policy trained from scratch the moderate starting success of the paper's base model, so that RL has
groups with both successes and failures to learn from. Only training-split demonstrations may be used.

Two losses (:class:`SftLoss`), optionally mixed:

- ``TOKEN``: token-mean cross-entropy of the response (the command followed by EOS) given the prompt.
- ``CANDIDATE``: cross-entropy over the admissible commands, each scored by its summed log-likelihood (command + EOS)
  given the prompt: ``-log softmax_k(s_k)[expert]`` with ``s_k = sum_t log p(c_{k,t} | prompt, c_{k,<t})``. This is
  exactly the distribution the likelihood action selector samples from at temperature 1. With ``max_candidates`` the
  softmax runs over the expert's command and a subset of the others: the shortest ones (``look``, ``inventory``: a
  summed log-likelihood favours short commands, and a token-loss-only model picks ``look`` everywhere) plus a seeded
  random draw (a sampled softmax: cheaper, since every scored candidate token costs one vocabulary-sized head row).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.types import ChatMessages
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.microbatch import pack_by_length
from rlanything_core.types import rows_from_sequences

__all__ = ["SftLoss", "candidate_scores", "supervised_warm_start"]


class SftLoss(str, enum.Enum):
    """The warm-start objective."""

    TOKEN = "token"
    """Token-mean cross-entropy of the demonstrated response."""
    CANDIDATE = "candidate"
    """Cross-entropy over the admissible commands' summed log-likelihoods (the likelihood selector's distribution)."""
    MIXED = "mixed"
    """``TOKEN + candidate_weight * CANDIDATE``."""


def candidate_scores(
    model: Any, prompt_ids: Sequence[int], candidates: Sequence[Sequence[int]], *, pad_id: int
) -> Tensor:
    """Summed log-likelihood of each candidate continuation given one prompt, differentiable.

    The prompt runs once; its KV cache is repeated for the candidates, which run as one right-padded batch (the same
    computation as ``TransformersBackend.score_continuations``, with gradients).

    Args:
        model: a transformers causal LM.
        prompt_ids: the rendered prompt, ``P`` tokens.
        candidates: ``K`` non-empty token lists (each already ending with EOS when scored that way).
        pad_id: padding id.

    Returns:
        ``(K,)`` float32 scores.
    """
    if not candidates or any(len(c) == 0 for c in candidates):
        raise ValueError("candidates: expected a non-empty list of non-empty token lists")
    k, width, p = len(candidates), max(len(c) for c in candidates), len(prompt_ids)
    prompt_t = torch.tensor([list(prompt_ids)], dtype=torch.long)
    out = model(input_ids=prompt_t, use_cache=True, logits_to_keep=1)
    first_logp = torch.log_softmax(out.logits[0, -1, :].float(), dim=-1)  # (V,)
    cache = out.past_key_values
    cache.batch_repeat_interleave(k)
    ids = torch.full((k, width), pad_id, dtype=torch.long)
    valid = torch.zeros((k, width), dtype=torch.bool)
    for n, c in enumerate(candidates):
        ids[n, : len(c)] = torch.tensor(list(c), dtype=torch.long)
        valid[n, : len(c)] = True
    total = first_logp[ids[:, 0]]
    if width > 1:
        mask = torch.cat([valid.new_ones((k, p)), valid], dim=-1).long()
        positions = p + torch.arange(width).expand(k, width)
        logits = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1],
                       past_key_values=cache).logits  # (K, W-1, V): position t predicts token t+1
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]  # (K, W-1)
        total = total + torch.where(valid[:, 1:], logp, torch.zeros_like(logp)).sum(dim=-1)
    return total


def _subset(others: list[str], n: int, rng: random.Random, length: Any, response: str) -> list[str]:
    """``n`` negatives for ``response``: the hard ones first, then the short ones, then a random draw.

    Hard negatives share the response's verb ("take cellphone 2 from desk 1" against "take alarmclock 3 from desk 1"):
    without them a small model learns which *kind* of command comes next but never which object, and takes whatever
    it sees. Short ones are there because a summed log-likelihood favours short commands ("look").
    """
    verb = response.split(" ", 1)[0]
    same = [c for c in others if c.split(" ", 1)[0] == verb]
    hard = rng.sample(same, min(len(same), n // 2))
    short = [c for c in sorted(others, key=length) if c not in hard][: max(0, (n - len(hard)) // 2)]
    chosen = set(hard) | set(short)
    rest = [c for c in others if c not in chosen]
    return hard + short + rng.sample(rest, n - len(hard) - len(short))


def _token_loss(model: Any, prompts: list[list[int]], responses: list[list[int]], batch: list[int], pad: int,
                max_tokens: int, scale: float) -> float:
    """Backward the token-mean cross-entropy of ``batch``'s responses (times ``scale``); return its value."""
    rows = rows_from_sequences([prompts[i] for i in batch], [responses[i] for i in batch],
                               [(i, 0, -1) for i in batch], pad_id=pad)
    total = int(rows.response_mask.sum())
    value = 0.0
    lengths = rows.attention_mask.sum(dim=1).tolist()
    for micro in pack_by_length(lengths, max_tokens=max_tokens):
        part = rows.select(micro)
        logp = sequence_token_logprobs(model, part.input_ids, part.attention_mask, score_mask=part.response_mask)
        loss = -torch.where(part.response_mask, logp, torch.zeros_like(logp)).sum() / total
        (loss * scale).backward()
        value += float(loss.detach())
    return value


def supervised_warm_start(
    model: Any,
    tokenizer: Any,
    examples: Sequence[tuple[ChatMessages, str]],
    *,
    epochs: int = 1,
    lr: float = 1e-3,
    batch_size: int = 16,
    max_tokens: int = 16384,
    seed: int = 0,
    progress: bool = False,
    loss: SftLoss | str = SftLoss.TOKEN,
    candidates: Sequence[Sequence[str]] | None = None,
    max_candidates: int | None = None,
    candidate_weight: float = 1.0,
    weight_decay: float = 0.0,
) -> list[float]:
    """Train ``model`` on ``(prompt messages, response)`` pairs.

    The response is tokenized on its own and followed by EOS, exactly as the likelihood action selector scores it.
    The learning rate decays linearly to 0 over the run (after 5% warm-up).

    Args:
        model: a transformers causal LM (trained in place, left in eval mode).
        tokenizer: its chat tokenizer.
        examples: ``(messages, response)`` pairs.
        epochs: passes over the examples.
        lr: peak AdamW learning rate.
        batch_size: examples per optimizer step.
        max_tokens: token budget of one micro-batch (token loss).
        seed: shuffling and candidate-subset seed.
        progress: show a progress bar.
        loss: the objective (:class:`SftLoss`).
        candidates: for ``CANDIDATE``/``MIXED``: the admissible commands of each example (the response among them).
        max_candidates: score at most this many candidates per example (the response, others with its verb, the
            shortest others, a random draw of the rest); ``None``: all.
        candidate_weight: weight of the candidate term in ``MIXED``.
        weight_decay: AdamW weight decay.

    Returns:
        The loss of every optimizer step.

    Raises:
        ValueError: bad sizes, an unknown ``loss``, missing ``candidates``, or a response not among its candidates.
    """
    # Over 60 lines only for its signature and docstring (14 documented options): the body is one short loop.
    kind = _checked_objective(examples, epochs, batch_size, loss, candidates, max_candidates)
    eos = int(tokenizer.eos_token_id)
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos)

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"]) + [eos]

    prompts = [render_prompt(tokenizer, messages) for messages, _ in examples]
    responses = [encode(text) for _, text in examples]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    rng = random.Random(seed)
    order = list(range(len(examples)))
    losses: list[float] = []
    steps = epochs * ((len(order) + batch_size - 1) // batch_size)
    scheduler = _warmup_linear_decay(optimizer, steps)
    scales = _loss_scales(kind, candidate_weight)
    model.train()
    bar = tqdm(total=steps, desc="warm start", disable=not progress, leave=False)
    for _ in range(epochs):
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            optimizer.zero_grad()
            value = _batch_loss(
                model, batch, prompts, responses, examples, candidates, encode,
                pad=pad, max_tokens=max_tokens, scales=scales, max_candidates=max_candidates, rng=rng,
            )  # fmt: skip
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(value)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.3f}")
    bar.close()
    model.eval()
    return losses


def _checked_objective(
    examples: Sequence[tuple[ChatMessages, str]],
    epochs: int,
    batch_size: int,
    loss: SftLoss | str,
    candidates: Sequence[Sequence[str]] | None,
    max_candidates: int | None,
) -> SftLoss:
    """The objective of ``supervised_warm_start``, after checking its arguments (see its ``Raises``)."""
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs, batch_size: expected >= 1, got {epochs}, {batch_size}")
    try:
        kind = SftLoss(loss)
    except ValueError:
        raise ValueError(f"loss: expected one of {[k.value for k in SftLoss]}, got {loss!r}") from None
    if kind is not SftLoss.TOKEN:
        if candidates is None or len(candidates) != len(examples):
            raise ValueError(f"candidates: expected one list of admissible commands per example ({len(examples)})")
        for n, ((_, response), cands) in enumerate(zip(examples, candidates)):
            if response not in cands:
                raise ValueError(f"candidates[{n}]: expected the response {response!r} among the candidates")
    if max_candidates is not None and max_candidates < 2:
        raise ValueError(f"max_candidates: expected >= 2 or None, got {max_candidates}")
    return kind


def _loss_scales(kind: SftLoss, candidate_weight: float) -> tuple[float, float]:
    """``(token term weight, candidate term weight)`` of the objective ``kind``."""
    token_scale = 1.0 if kind is not SftLoss.CANDIDATE else 0.0
    cand_scale = {SftLoss.TOKEN: 0.0, SftLoss.CANDIDATE: 1.0, SftLoss.MIXED: candidate_weight}[kind]
    return token_scale, cand_scale


def _batch_loss(
    model: Any,
    batch: list[int],
    prompts: list[list[int]],
    responses: list[list[int]],
    examples: Sequence[tuple[ChatMessages, str]],
    candidates: Sequence[Sequence[str]] | None,
    encode: Callable[[str], list[int]],
    *,
    pad: int,
    max_tokens: int,
    scales: tuple[float, float],
    max_candidates: int | None,
    rng: random.Random,
) -> float:
    """Back-propagate one optimizer step's objective over ``batch`` (example indices); return its value.

    The token term over the whole batch, then each example's candidate term, weighted by ``scales`` (see
    :func:`_loss_scales`); a zero weight skips its term.
    """
    token_scale, cand_scale = scales
    value = 0.0
    if token_scale:
        value += _token_loss(model, prompts, responses, batch, pad, max_tokens, token_scale)
    if cand_scale and candidates is not None:
        for i in batch:
            value += _candidate_term(
                model, prompts[i], responses[i], examples[i][1], candidates[i], encode,
                pad=pad, scale=cand_scale, batch_size=len(batch), max_candidates=max_candidates, rng=rng,
            )  # fmt: skip
    return value


def _warmup_linear_decay(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over 5% of ``steps`` (at least one), then linear decay to 0 at ``steps``."""
    warmup = max(1, steps // 20)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )


def _candidate_term(
    model: Any,
    prompt: list[int],
    response: list[int],
    response_text: str,
    candidates: Sequence[str],
    encode: Callable[[str], list[int]],
    *,
    pad: int,
    scale: float,
    batch_size: int,
    max_candidates: int | None,
    rng: random.Random,
) -> float:
    """Back-propagate one example's candidate term; return its value (0 when the response is the only candidate).

    The term is ``scale * -log softmax(scores)[response] / batch_size`` over the response and (a subset of) the other
    candidates.
    """
    others = [c for c in candidates if c != response_text]
    if max_candidates is not None and len(others) > max_candidates - 1:
        others = _subset(others, max_candidates - 1, rng, lambda c: len(encode(c)), response_text)
    if not others:
        return 0.0
    scores = candidate_scores(model, prompt, [response] + [encode(c) for c in others], pad_id=pad)
    term = -torch.log_softmax(scores, dim=0)[0] / batch_size
    (term * scale).backward()
    return scale * float(term.detach())
