"""Trained weights to a generation engine: full tensors gathered from FSDP2 shards, HF names, in buckets.

The pattern of verl's FSDP-to-vLLM sharding manager, written for this loop: before each iteration's rollouts every
rank gathers each parameter (``DTensor.full_tensor()``: one all-gather per tensor, in module order, the same on every
rank), casts it to the engine's dtype, and the tensors go to the engine in buckets of at most ``bucket_bytes`` (so a
7B model never needs a second full copy in memory). Names are the HF parameter names
(``model.layers.0.mlp.up_proj.weight``), which vLLM's ``load_weights`` maps onto its fused layers. A receiver with
``update_weights_buckets`` gets the whole push as one call (one reload of the engine, not one per bucket).
``EngineCycle`` wakes the engines for the rollouts and puts them to sleep afterwards, so their KV cache does not
compete with training for GPU memory; as their weights are pushed on every wake, engines that can drop them while
asleep (``VLLMBackend``: sleep level 2) do, and wake their weights before the push and their KV cache after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import torch
from torch import Tensor, nn

__all__ = ["EngineCycle", "WeightReceiver", "buckets", "named_full_tensors", "push_weights", "weights_droppable"]


class WeightReceiver(Protocol):
    """What receives weights: ``update_weights({name: tensor})`` for a part of the model (one bucket)."""

    def update_weights(self, named_tensors: dict[str, Tensor]) -> None:
        """Load these tensors (a part of the model) into the engine."""


def named_full_tensors(model: nn.Module, *, dtype: torch.dtype | None = None) -> Iterator[tuple[str, Tensor]]:
    """``(name, full tensor)`` for every parameter of ``model`` (HF names; a tied weight once), gathering shards.

    Collective when ``model`` is sharded (``DTensor`` parameters): every rank must iterate to the end, in step. Within
    ``rlanything_core.lightning.sharding.gathered`` the parameters are already full and nothing is communicated.
    (Parameters, not ``state_dict()``: FSDP2's state-dict hook would reshard gathered weights.)
    """
    for name, value in model.named_parameters():
        full = value.full_tensor() if hasattr(value, "full_tensor") else value
        yield name, (full.to(dtype) if dtype is not None else full).detach()


def buckets(named: Iterable[tuple[str, Tensor]], *, bucket_bytes: int) -> Iterator[list[tuple[str, Tensor]]]:
    """Group ``(name, tensor)`` pairs, in order, into lists of at most ``bucket_bytes`` (a larger tensor goes alone).

    Examples:
        >>> t = torch.zeros(4)  # 16 bytes
        >>> [[n for n, _ in b] for b in buckets([("a", t), ("b", t), ("c", t)], bucket_bytes=32)]
        [['a', 'b'], ['c']]
    """
    if bucket_bytes < 1:
        raise ValueError(f"bucket_bytes: expected >= 1, got {bucket_bytes}")
    current: list[tuple[str, Tensor]] = []
    size = 0
    for name, tensor in named:
        nbytes = tensor.numel() * tensor.element_size()
        if current and size + nbytes > bucket_bytes:
            yield current
            current, size = [], 0
        current.append((name, tensor))
        size += nbytes
    if current:
        yield current


def push_weights(
    model: nn.Module,
    receiver: WeightReceiver | None,
    *,
    bucket_bytes: int = 512 * 2**20,
    dtype: torch.dtype | None = None,
) -> int:
    """Send ``model``'s full weights to ``receiver`` bucket by bucket; returns the number of buckets.

    Every rank must call it (the gathers are collective); a rank without an engine passes ``receiver=None`` and only
    takes part in the gathers.
    """
    count = [0]

    def counted(parts: Iterator[list[tuple[str, Tensor]]]) -> Iterator[list[tuple[str, Tensor]]]:
        for part in parts:
            count[0] += 1
            yield part

    with torch.no_grad():
        parts = counted(buckets(named_full_tensors(model, dtype=dtype), bucket_bytes=bucket_bytes))
        whole = getattr(receiver, "update_weights_buckets", None)
        if callable(whole):
            whole(parts)
        elif receiver is not None:
            for bucket in parts:
                receiver.update_weights(dict(bucket))
        for _ in parts:  # what a receiver left unread (or this rank's share without one): the gathers are collective
            pass
    return count[0]


class EngineCycle:
    """Engines awake, holding the current trained weights, within ``awake()``; asleep otherwise (the updates).

    ``awake()`` is the loop's rollout context (``FabricRuntime(rollout_context=...)``): entered on every rank before an
    iteration's rollouts and before an evaluation, so the (collective) weight push runs everywhere in step.

    Args:
        engines: backends with ``wake_up()`` / ``sleep()`` (e.g. ``VLLMBackend`` with sleep mode).
        sync: called after waking: pushes the trained weights (``push_weights``).
    """

    def __init__(self, engines: Sequence[Any], *, sync: Callable[[], None] | None = None) -> None:
        self.engines = list(engines)
        self.sync = sync

    @contextmanager
    def awake(self) -> Iterator[None]:
        """Wake the engines and push the weights; put the engines back to sleep at the end.

        With a ``sync`` the engines' weights are overwritten on every wake, so an engine that can
        (``weights_droppable``) sleeps without keeping them and wakes its weights, then its KV cache after the push
        (the cache is not allocated while the pushed tensors are in flight).
        """
        droppable = [self.sync is not None and weights_droppable(e) for e in self.engines]
        for engine, drop in zip(self.engines, droppable):
            if drop:
                engine.wake_up(tags=["weights"])
            else:
                engine.wake_up()
        try:
            if self.sync is not None:
                self.sync()
            for engine, drop in zip(self.engines, droppable):
                if drop:
                    engine.wake_up(tags=["kv_cache"])
            yield
        finally:
            for engine, drop in zip(self.engines, droppable):
                if drop:
                    engine.sleep(level=2)
                else:
                    engine.sleep()


def weights_droppable(engine: Any) -> bool:
    """Whether ``engine`` sleeps without its weights and wakes in parts (``VLLMBackend``: level 2, tags)."""
    from rlanything_core.generation.vllm_backend import VLLMBackend

    return isinstance(engine, VLLMBackend)
