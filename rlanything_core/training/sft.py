"""Supervised warm start: maximize the log-likelihood of demonstrated responses (the expert's commands).

Gives a small policy trained from scratch the moderate starting success of the paper's base model, so that RL has
groups with both successes and failures to learn from. Only training-split demonstrations may be used.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from rlanything_core.collect.batching import rows_from_sequences
from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.types import ChatMessages
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.microbatch import pack_by_length

__all__ = ["supervised_warm_start"]


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
) -> list[float]:
    """Train ``model`` on ``(prompt messages, response)`` pairs with a token-mean cross-entropy on the response.

    The response is tokenized on its own and followed by EOS, exactly as the likelihood action selector scores it.

    Returns:
        The loss of every optimizer step.
    """
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs, batch_size: expected >= 1, got {epochs}, {batch_size}")
    eos = int(tokenizer.eos_token_id)
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos)
    prompts = [render_prompt(tokenizer, messages) for messages, _ in examples]
    responses = [list(tokenizer(text, add_special_tokens=False)["input_ids"]) + [eos] for _, text in examples]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    order = list(range(len(examples)))
    losses: list[float] = []
    model.train()
    steps = epochs * ((len(order) + batch_size - 1) // batch_size)
    bar = tqdm(total=steps, desc="warm start", disable=not progress, leave=False)
    for _ in range(epochs):
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            rows = rows_from_sequences(
                [prompts[i] for i in batch],
                [responses[i] for i in batch],
                [[] for _ in batch],
                [(i, 0, -1) for i in batch],
                pad_id=pad,
            )
            total = int(rows.response_mask.sum())
            optimizer.zero_grad()
            loss_value = 0.0
            lengths = rows.attention_mask.sum(dim=1).tolist()
            for micro in pack_by_length(lengths, max_tokens=max_tokens):
                part = rows.select(micro)
                logp = sequence_token_logprobs(
                    model, part.input_ids, part.attention_mask, score_mask=part.response_mask
                )
                loss = -torch.where(part.response_mask, logp, torch.zeros_like(logp)).sum() / total
                loss.backward()
                loss_value += float(loss)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss_value)
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.3f}")
    bar.close()
    model.eval()
    return losses
