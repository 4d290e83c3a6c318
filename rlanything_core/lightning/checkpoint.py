"""Atomic checkpoints of the whole loop, as one file or sharded (torch.distributed.checkpoint), through Fabric.

Saving in place, a crash mid-write would leave a truncated ``last.ckpt`` and no way to resume. ``atomic_save`` makes
``last.ckpt`` always name a complete checkpoint:

- one file (single process, DDP, FSDP2 with full state dicts): written to a temporary file, fsynced and renamed over
  ``last.ckpt`` (the rename is atomic);
- sharded (``ModelParallelStrategy(save_distributed_checkpoint=True)``: every rank writes its own shards of the
  weights and optimizer states with ``torch.distributed.checkpoint``, nothing is gathered): each save goes to a new
  directory ``.shards/<name>-<id>/``; when every rank has written (DCP fsyncs its files), rank 0 points the symlink
  ``last.ckpt`` at it (a new link renamed over the old one: atomic) and removes directories no link names any more.
  A kill at any point leaves ``last.ckpt`` on the previous complete checkpoint.

The loop's checkpoint (``loop/rlanything_loop.py``) holds the policy and judge weights (``state_dict``, names
``policy.*`` and ``judge.*``), both optimizers (``optimizer_0``, ``optimizer_1``), the loop's state (completed
iterations, RNG states; the task pool is rolled back to the matching snapshot on load) and the update history.
``read_checkpoint`` reads either form back into one dictionary on a single process.

Off the critical path (one process, a CUDA device: ``scale=1gpu``): a sharded save copies the shards to pinned host
memory and returns; ``torch.distributed.checkpoint.async_save`` writes them in a background thread, after which the
link is swapped (in that thread: with one rank no other rank must agree). The caller's timing
(``time/checkpoint_s``) therefore shows the blocking part, the copy. The next save first waits for the previous
write, so at most one copy is staged, and ``last.ckpt`` names the newest *complete* save throughout: a crash while
writing leaves the previous one. ``wait_for_saves`` waits for a write in flight (a resume in the same process;
interpreter exit also waits for the writer thread).
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from lightning.fabric import Fabric

from rlanything_core.files import CorruptFileError, fsync_dir

__all__ = [
    "atomic_save",
    "check_checkpoint_file",
    "initialize_optimizer_state",
    "read_checkpoint",
    "resume_path",
    "saves_sharded",
    "wait_for_saves",
]

SHARDS = ".shards"  # beside last.ckpt: one directory per sharded save
METADATA = "meta.pt"  # what Lightning's ModelParallelStrategy writes beside the shards (all but weights and optimizers)
_PENDING: list[Future[Any]] = []  # the asynchronous write in flight (at most one)
_ERRORS: list[BaseException] = []  # a background write's failure, raised by the next save or wait
_LOCK = threading.Lock()
_FINISHER: list[ThreadPoolExecutor] = []  # waits for a write, then swaps the link (joined at interpreter exit)
_GLOO: list[Any] = []  # async_save's collectives need a CPU backend; the strategy's group may be NCCL only


def saves_sharded(fabric: Fabric) -> bool:
    """Whether the Fabric's strategy writes sharded (``torch.distributed.checkpoint``) checkpoints."""
    return bool(getattr(fabric.strategy, "_save_distributed_checkpoint", False))


def _atomic_save_file(fabric: Fabric, target: Path, state: dict[str, Any]) -> None:
    tmp = target.with_name(target.name + ".tmp")
    fabric.save(tmp, state)  # rank 0 writes (the strategy gathers full state dicts where it shards)
    if fabric.is_global_zero:
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if target.is_symlink() or not target.is_dir():
            os.replace(tmp, target)
        else:  # pragma: no cover - a directory left by hand where the file goes
            shutil.rmtree(target)
            os.replace(tmp, target)
        fsync_dir(target.parent)


def initialize_optimizer_state(optimizer: torch.optim.Optimizer) -> bool:
    """Give an optimizer that has not stepped yet the state its first step would start from; ``True`` if it did.

    A sharded checkpoint lists every state entry it holds, and loading asks for the entries a fresh optimizer makes
    (torch.distributed.checkpoint initializes one with a zero-lr step): an optimizer saved before its first step
    (no row in the band yet) has none, and the resume fails on the missing keys. Here a zero-lr step on zero
    gradients creates the entries (Adam's moments: zero), then every ``step`` count is reset to 0, so the state equals
    the one the first real step creates by itself (the bias correction is unchanged) and the parameters and gradients
    are untouched.
    """
    if optimizer.state:
        return False
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    grads = [p.grad for p in params]
    lrs = [group.get("lr") for group in optimizer.param_groups]
    try:
        for p in params:
            p.grad = torch.zeros_like(p)
        for group in optimizer.param_groups:
            if "lr" in group:
                group["lr"] = torch.zeros_like(group["lr"]) if isinstance(group["lr"], torch.Tensor) else 0.0
        optimizer.step()
    finally:
        for group, lr in zip(optimizer.param_groups, lrs):
            if lr is not None:
                group["lr"] = lr
        for p, grad in zip(params, grads):
            p.grad = grad
    for state in optimizer.state.values():
        step = state.get("step")
        if isinstance(step, torch.Tensor):
            step.zero_()
        elif step is not None:
            state["step"] = 0
    return True


def _point_link(target: Path, shards: Path) -> None:
    """Rank 0, once every rank's shards are written: ``target`` becomes a link to ``shards`` (atomic swap)."""
    fsync_dir(shards)
    fsync_dir(shards.parent)
    link = target.with_name(target.name + ".tmp")
    if link.is_symlink() or link.exists():
        link.unlink()
    os.symlink(os.path.relpath(shards, target.parent), link)
    if target.is_dir() and not target.is_symlink():  # pragma: no cover - a directory where the link goes
        shutil.rmtree(target)
    os.replace(link, target)
    fsync_dir(target.parent)
    _remove_unreferenced(target.parent)


def _atomic_save_sharded(fabric: Fabric, target: Path, state: dict[str, Any], *, asynchronous: bool) -> None:
    for value in state.values():  # every rank the same: each holds a shard of every parameter
        if isinstance(value, torch.optim.Optimizer):
            initialize_optimizer_state(value)
    # a fresh directory per save (named by rank 0: every rank must write into the same one)
    name = fabric.broadcast(f"{target.stem}-{uuid.uuid4().hex[:12]}")
    shards = target.parent / SHARDS / name
    if asynchronous:
        _save_sharded_async(target, shards, state)
        return
    fabric.save(shards, state)  # collective: every rank writes its shards, rank 0 the metadata
    fabric.barrier("sharded_checkpoint_written")
    if fabric.is_global_zero:
        _point_link(target, shards)


def wait_for_saves() -> None:
    """Wait for the asynchronous checkpoint write in flight, if any; raise what a background write raised."""
    with _LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
    for future in pending:
        future.result()
    if _ERRORS:
        error = _ERRORS.pop()
        _ERRORS.clear()
        raise RuntimeError(f"checkpoint: a background write failed, last.ckpt is the previous save: {error}") from error


def _split_state(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sharded state dicts (modules, optimizers) and the metadata.

    In the layout Lightning's ``ModelParallelStrategy`` writes and reads, through the public
    ``torch.distributed.checkpoint.state_dict`` APIs.
    """
    from lightning.fabric import is_wrapped
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict
    from torch.distributed.tensor import DTensor

    def unwrapped(value: Any) -> Any:  # what Fabric.save unwraps: the module and optimizer under Fabric's wrappers
        if not is_wrapped(value):
            return value
        return value.module if isinstance(value, torch.nn.Module) else value.optimizer

    state = {key: unwrapped(value) for key, value in state.items()}

    modules = [v for v in state.values() if isinstance(v, torch.nn.Module) and
               any(isinstance(p, DTensor) for p in v.parameters())]  # fmt: skip
    if len(modules) != 1:
        raise ValueError(f"state: expected one sharded module to save asynchronously, got {len(modules)}")
    # the shards stay where they are: the stager copies them to (pinned) host memory in one pass
    options = StateDictOptions(full_state_dict=False, cpu_offload=False)
    shards: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, torch.nn.Module):
            shards[key] = get_model_state_dict(value, options=options)
        elif isinstance(value, torch.optim.Optimizer):
            shards[key] = get_optimizer_state_dict(modules[0], value, options=options)
        elif callable(getattr(value, "state_dict", None)) and callable(getattr(value, "load_state_dict", None)):
            metadata[key] = value.state_dict()
        else:
            metadata[key] = value
    return shards, metadata


def _save_sharded_async(target: Path, shards: Path, state: dict[str, Any]) -> None:
    """One process: stage the shards to host memory, write them in the background, then swap the link."""
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

    wait_for_saves()  # one write in flight: the previous one completes (and its link moves) first
    converted, metadata = _split_state(state)
    shards.mkdir(parents=True, exist_ok=True)
    torch.save(metadata, shards / METADATA)
    if not _GLOO:
        _GLOO.append(dist.new_group(backend="gloo"))
    pinned = torch.cuda.is_available()
    stager = DefaultStager(StagingOptions(pinned, False, False, False))
    # no_dist: one process, so the background write needs no collective (the group may be gone when the run exits
    # before the last write completes); the group is still passed, as async_save checks for a CPU backend
    future: Any = dcp.async_save(
        converted, checkpoint_id=str(shards), process_group=_GLOO[0], async_stager=stager, no_dist=True
    )
    if not isinstance(future, Future):  # an AsyncSaveResponse (asynchronous staging): the upload's future
        future = future.upload_completion

    def finish() -> None:  # not a done-callback: a waiter must see the link moved once the wait returns
        try:
            future.result()
            _point_link(target, shards)
        except BaseException as exc:  # noqa: BLE001 - reported by the next save or wait (this is a worker thread)
            _ERRORS.append(exc)

    if not _FINISHER:
        _FINISHER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlanything-checkpoint"))
    with _LOCK:
        _PENDING.append(_FINISHER[0].submit(finish))


def _remove_unreferenced(dirpath: Path) -> None:
    """Delete the shard directories that no checkpoint link in ``dirpath`` points at (superseded saves)."""
    root = dirpath / SHARDS
    if not root.is_dir():
        return
    kept = {Path(os.path.realpath(p)) for p in dirpath.iterdir() if p.is_symlink()}
    for entry in root.iterdir():
        if Path(os.path.realpath(entry)) not in kept:
            shutil.rmtree(entry, ignore_errors=True)


def atomic_save(
    fabric: Fabric, path: str | os.PathLike[str], state: dict[str, Any], *, asynchronous: bool | None = None
) -> None:
    """Save ``state`` (modules, optimizers, plain values) to ``path`` atomically: complete or the previous one.

    One file: a temporary file, fsync, ``os.replace`` (rank 0 renames). Sharded strategies: a new shard directory,
    then ``path`` becomes a symlink to it (rank 0 swaps it atomically). Collective: every rank calls it.

    Args:
        fabric: the run's Fabric.
        path: the checkpoint's name (``last.ckpt``).
        state: what to save.
        asynchronous: write a sharded save in the background (one process only: see the module's docstring); by
            default where it pays, one process on a CUDA device.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if saves_sharded(fabric):
        one = fabric.world_size == 1
        if asynchronous is None:
            asynchronous = one and fabric.device.type == "cuda"
        elif asynchronous and not one:
            raise ValueError(f"asynchronous: expected one process, got {fabric.world_size} (their link swap agrees)")
        _atomic_save_sharded(fabric, target, state, asynchronous=asynchronous)
    else:
        _atomic_save_file(fabric, target, state)
    fabric.barrier("atomic_save_checkpoint")


_CKPT_FIX = (
    "move it aside and rerun to start the run over (or copy a kept checkpoints/iter_<n>.ckpt over it and rerun "
    "to resume from that iteration)"
)


def check_checkpoint_file(path: str | os.PathLike[str]) -> None:
    """Raise :class:`CorruptFileError` (one line: the file, what is wrong, what to do) unless ``path`` looks whole.

    A one-file checkpoint is a ``torch.save`` zip archive: its central directory must read, its pickle must be
    present with a correct CRC, and every entry must lie inside the file (a truncated or overwritten file fails here,
    not later inside ``torch.load`` as a bare ``EOFError`` or ``struct.error``). The tensors' bytes are not read.
    """
    target = Path(path)
    size = target.stat().st_size
    try:
        with zipfile.ZipFile(target) as archive:
            infos = archive.infolist()
            pickles = [i for i in infos if i.filename.endswith("/data.pkl")]
            if len(pickles) != 1:
                raise CorruptFileError(f"{target}: not a torch checkpoint (no data.pkl in the archive); {_CKPT_FIX}")
            for info in infos:
                if info.header_offset + info.compress_size > size:
                    raise CorruptFileError(
                        f"{target}: entry {info.filename} runs past the end of the file (truncated); {_CKPT_FIX}"
                    )
            archive.read(pickles[0])  # checks its CRC
    except CorruptFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as err:
        what = "empty" if size == 0 else f"unreadable ({type(err).__name__}: {err})"
        raise CorruptFileError(f"{target}: checkpoint file is {what}; {_CKPT_FIX}") from None


def resume_path(path: str | os.PathLike[str]) -> Path | None:
    """``path`` when it names a complete checkpoint (a file, or a link to a sharded one), else ``None``.

    Raises:
        CorruptFileError: a checkpoint file is there but damaged (:func:`check_checkpoint_file`), or a checkpoint
            link points at no complete sharded checkpoint (a link is only ever made to one: its shards were lost).
    """
    wait_for_saves()  # a write of this process in flight moves the link when it completes
    target = Path(path)
    if target.is_file():
        check_checkpoint_file(target)
        return target
    if target.is_dir() and (target / METADATA).is_file():
        return target
    if target.is_symlink():  # without this, the run silently started over
        raise CorruptFileError(
            f"{target}: links to {os.readlink(target)}, which is not a complete sharded checkpoint "
            f"(no {METADATA}); {_CKPT_FIX}"
        )
    return None


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The whole checkpoint at ``path`` as one dictionary, on one process (no process group needed).

    A file is ``torch.load``-ed. A sharded checkpoint is assembled from its shards (full tensors) and its metadata:
    ``state_dict`` maps each parameter's name to its full tensor as in a one-file checkpoint, and the optimizers'
    states come under ``optimizer_0``, ``optimizer_1`` (torch.distributed.checkpoint's layout: ``{"state": {name:
    {...}}, "param_groups": [...]}``, keyed by parameter name).
    """
    wait_for_saves()
    target = Path(path)
    if target.is_file():
        check_checkpoint_file(target)
        return dict(torch.load(target, map_location="cpu", weights_only=False))
    if resume_path(target) is None:
        raise ValueError(f"path: expected a checkpoint file or a sharded checkpoint directory, got {str(target)!r}")
    import tempfile

    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    # the public conversion (one process, no group): the shards assembled into one torch.save file, then loaded
    with tempfile.TemporaryDirectory(prefix="rlanything-read-") as scratch:
        whole = Path(scratch) / "whole.pt"
        dcp_to_torch_save(target, whole)
        state: dict[str, Any] = torch.load(whole, map_location="cpu", weights_only=False)
    meta = torch.load(target / METADATA, map_location="cpu", weights_only=False)
    return {**meta, **state}
