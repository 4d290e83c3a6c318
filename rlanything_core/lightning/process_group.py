"""The object collectives over ``torch.distributed``: the one place the loop's data side reaches the process group.

``FabricRuntime`` (``fabric_runtime.py``) answers ``loop.protocol.Collectives`` through these functions, once Fabric
started the process group; :class:`ProcessGroup` answers it for a process group started by hand
(``torch.distributed.init_process_group``: the multi-process tests, a user's own launcher). Outside a process group
(or with one rank) every collective is the identity, as in ``loop.protocol.SingleProcess``.
"""

from __future__ import annotations

from typing import Any

import torch.distributed as dist

__all__ = ["ProcessGroup", "all_gather_object", "broadcast_object", "rank_world", "scatter_object"]


def rank_world() -> tuple[int, int]:
    """``(rank, world size)`` of the default process group; ``(0, 1)`` outside ``torch.distributed``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_gather_object(obj: Any, world: int) -> list[Any]:
    """Every rank's ``obj`` in rank order (``all_gather_object``); ``[obj]`` for one rank."""
    if world == 1:
        return [obj]
    parts: list[Any] = [None] * world
    dist.all_gather_object(parts, obj)
    return parts


def broadcast_object(obj: Any, src: int, world: int) -> Any:
    """Rank ``src``'s ``obj`` on every rank (``broadcast_object_list``); ``obj`` for one rank."""
    if world == 1:
        return obj
    payload: list[Any] = [obj]
    dist.broadcast_object_list(payload, src=src)
    return payload[0]


def scatter_object(objs: list[Any] | None, src: int, world: int) -> Any:
    """Rank ``src``'s ``objs[rank]`` on each rank (``scatter_object_list``); ``objs[0]`` for one rank.

    Raises:
        ValueError: one rank, and ``objs`` is not one object.
    """
    if world == 1:
        if objs is None or len(objs) != 1:
            raise ValueError(f"objs: expected one object per rank (1), got {objs!r}")
        return objs[0]
    out: list[Any] = [None]
    dist.scatter_object_list(out, objs, src=src)
    return out[0]


class ProcessGroup:
    """``loop.protocol.Collectives`` over the default ``torch.distributed`` process group (one rank without one)."""

    @property
    def rank(self) -> int:
        """The global rank (0 outside a process group)."""
        return rank_world()[0]

    @property
    def world_size(self) -> int:
        """The number of processes (1 outside a process group)."""
        return rank_world()[1]

    def all_gather_object(self, obj: Any, /) -> list[Any]:
        """Every rank's ``obj``, in rank order."""
        return all_gather_object(obj, self.world_size)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s ``obj``."""
        return broadcast_object(obj, src, self.world_size)

    def scatter_object(self, objs: list[Any] | None, src: int) -> Any:
        """Rank ``src``'s ``objs[rank]``."""
        return scatter_object(objs, src, self.world_size)
