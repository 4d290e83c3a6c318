"""Supervised warm start of an encoder scorer policy: cross-entropy on a teacher's command among the admissible ones.

``loss = -log softmax_k(logits)[teacher]`` over each example's candidates (the policy's own action distribution at
``T = 1``), in batches, AdamW with one learning rate for the fine-tuned encoder layers and another for the command
head and the cosine scale. The frozen bottom of the encoder runs once per example (its cache), then only the top
layers train.

Resumable: with ``checkpoint``, the trainable weights, the optimizer, the epoch/batch position and the shuffling RNG
are written atomically every ``checkpoint_every`` batches and at the end of each epoch; a rerun with the same file
continues where it stopped (the finished fit gives the same weights as an uninterrupted one).
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rlanything_core.files import atomic_write_bytes
from rlanything_core.models.scorer import EncoderScorerPolicy
from rlanything_core.progress import Progress

__all__ = ["ScorerExample", "candidate_cross_entropy", "fit_scorer", "top1_agreement"]


@dataclass(frozen=True)
class ScorerExample:
    """One supervised decision.

    Attributes:
        state: the state text.
        candidates: the admissible commands.
        target: the index of the teacher's command in ``candidates``.
    """

    state: str
    candidates: tuple[str, ...]
    target: int

    def __post_init__(self) -> None:
        if not 0 <= self.target < len(self.candidates):
            raise ValueError(f"target: expected an index in [0, {len(self.candidates)}), got {self.target}")


def candidate_cross_entropy(logits: Sequence[Tensor], targets: Sequence[int]) -> Tensor:
    """Mean over examples of ``-log softmax(logits_i)[targets_i]``.

    Args:
        logits: ``N`` tensors of shape ``(K_i,)``.
        targets: ``N`` indices.

    Returns:
        A scalar.
    """
    if len(logits) != len(targets) or not logits:
        raise ValueError(f"logits, targets: expected the same non-zero length, got {len(logits)}, {len(targets)}")
    losses = [-torch.log_softmax(lg, dim=0)[t] for lg, t in zip(logits, targets)]
    return torch.stack(losses).mean()


def _trainable_state(policy: EncoderScorerPolicy) -> dict[str, Tensor]:
    names = {n for n, p in policy.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in policy.state_dict().items() if k in names}


def _optimizer(policy: EncoderScorerPolicy, *, encoder_lr: float, head_lr: float) -> torch.optim.AdamW:
    """AdamW over the trainable weights: ``encoder_lr`` for the encoder's, ``head_lr`` for the head's and the scale."""
    head = [p for n, p in policy.named_parameters() if p.requires_grad and not n.startswith("encoder.")]
    body = [p for n, p in policy.named_parameters() if p.requires_grad and n.startswith("encoder.")]
    return torch.optim.AdamW([{"params": body, "lr": encoder_lr}, {"params": head, "lr": head_lr}],
                             weight_decay=0.0)  # fmt: skip


def _resume(
    path: Path | None, policy: EncoderScorerPolicy, optimizer: torch.optim.Optimizer, num_examples: int
) -> tuple[int, int, list[list[int]]]:
    """Load the checkpoint at ``path`` into ``policy`` and ``optimizer``, if there is one.

    Returns:
        ``(epoch, batch, orders)`` to continue from: the position and the per-epoch shuffles; ``(0, 0, [])`` when
        there is no checkpoint.

    Raises:
        ValueError: the checkpoint was written for another number of examples.
    """
    if path is None or not path.is_file():
        return 0, 0, []
    saved: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=False)
    if saved.get("num_examples") != num_examples:
        raise ValueError(f"checkpoint: {path} was written for {saved.get('num_examples')} examples, "
                         f"not {num_examples}; delete it to start over")  # fmt: skip
    policy.load_state_dict(saved["trainable"], strict=False)
    optimizer.load_state_dict(saved["optimizer"])
    return saved["epoch"], saved["batch"], saved["orders"]


def _save(
    path: Path,
    policy: EncoderScorerPolicy,
    optimizer: torch.optim.Optimizer,
    *,
    num_examples: int,
    position: tuple[int, int],
    orders: list[list[int]],
) -> None:
    """Write the resumable state atomically: the next ``(epoch, batch)`` to train is ``position``."""
    buffer = io.BytesIO()
    torch.save({"num_examples": num_examples, "trainable": _trainable_state(policy),
                "optimizer": optimizer.state_dict(), "epoch": position[0], "batch": position[1], "orders": orders},
               buffer)  # fmt: skip
    atomic_write_bytes(path, buffer.getvalue())


def _epoch_orders(orders: list[list[int]], *, epochs: int, num_examples: int, seed: int) -> list[list[int]]:
    """``orders`` (a resumed fit's) extended with one seeded shuffle per missing epoch.

    The shuffles are saved with the checkpoint, so that a resumed fit visits the examples in the same order.
    """
    rng = random.Random(seed)
    while len(orders) < epochs:
        order = list(range(num_examples))
        rng.shuffle(order)
        orders.append(order)
    return orders


def _batch_loss(policy: EncoderScorerPolicy, batch: Sequence[ScorerExample]) -> Tensor:
    """The candidate cross-entropy of ``batch`` under ``policy``."""
    states = [policy.state_ids(e.state) for e in batch]
    cands = [[policy.command_ids(c) for c in e.candidates] for e in batch]
    return candidate_cross_entropy(policy.logits(states, cands), [e.target for e in batch])


def fit_scorer(
    policy: EncoderScorerPolicy,
    examples: Sequence[ScorerExample],
    *,
    epochs: int = 2,
    batch_size: int = 16,
    encoder_lr: float = 1e-4,
    head_lr: float = 1e-3,
    seed: int = 0,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 50,
    progress: bool = True,
    on_epoch_end: Callable[[int], None] | None = None,
) -> list[float]:
    """Fit ``policy`` on ``examples`` (see the module docstring); returns the loss of every batch trained here.

    Args:
        policy: the scorer (trained in place).
        examples: the decisions.
        epochs: passes over the examples.
        batch_size: examples per optimizer step.
        encoder_lr: learning rate of the fine-tuned encoder layers.
        head_lr: learning rate of the command head and the cosine scale.
        seed: shuffling seed.
        checkpoint: resumable state file (``None``: not resumable).
        checkpoint_every: batches between checkpoints.
        progress: show a progress bar.
        on_epoch_end: called with the epoch index after each epoch.
    """
    # Over 60 lines only for its signature and docstring: the body is the loop and its checkpoints.
    if not examples:
        raise ValueError("examples: expected at least one example, got none")
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs, batch_size: expected >= 1, got {epochs}, {batch_size}")
    optimizer = _optimizer(policy, encoder_lr=encoder_lr, head_lr=head_lr)
    path = Path(checkpoint) if checkpoint is not None else None
    start_epoch, start_batch, orders = _resume(path, policy, optimizer, len(examples))
    orders = _epoch_orders(orders, epochs=epochs, num_examples=len(examples), seed=seed)
    per_epoch = (len(examples) + batch_size - 1) // batch_size

    def save(epoch: int, batch: int) -> None:
        if path is not None:
            _save(path, policy, optimizer, num_examples=len(examples), position=(epoch, batch), orders=orders)

    losses: list[float] = []
    bar = Progress(epochs * per_epoch, "warm start", unit="batches", initial=start_epoch * per_epoch + start_batch,
                   enabled=progress)  # a bar on a terminal and a line every 5%, with counts and ETA
    policy.train()
    for epoch in range(start_epoch, epochs):
        for b in range(start_batch if epoch == start_epoch else 0, per_epoch):
            loss = _batch_loss(policy, [examples[i] for i in orders[epoch][b * batch_size : (b + 1) * batch_size]])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
            if (b + 1) % checkpoint_every == 0:
                save(epoch, b + 1)
        save(epoch + 1, 0)
        if on_epoch_end is not None:
            on_epoch_end(epoch)
    bar.close()
    policy.eval()
    return losses


@torch.no_grad()
def top1_agreement(policy: EncoderScorerPolicy, examples: Sequence[ScorerExample], *, batch_size: int = 32) -> float:
    """Fraction of ``examples`` whose highest-scored candidate is the teacher's."""
    if not examples:
        raise ValueError("examples: expected at least one example, got none")
    hits = 0
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        logits = policy.logits([policy.state_ids(e.state) for e in batch],
                               [[policy.command_ids(c) for c in e.candidates] for e in batch])
        hits += sum(int(lg.argmax()) == e.target for lg, e in zip(logits, batch))
    return hits / len(examples)
