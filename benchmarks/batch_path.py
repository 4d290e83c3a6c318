"""How many package files one iteration's data crosses, from the pool's sampling to the checkpoint.

    python -m benchmarks.batch_path                  # the ALFWorld smoke (full arm, seed 0)
    python -m benchmarks.batch_path --list           # and the files themselves
    python -m benchmarks.batch_path arm=policy ...   # more Hydra overrides for the run

Builds the smoke run as ``rlanything train`` does (:func:`~rlanything_core.assembly.build_run`), then runs its loop
under ``sys.setprofile`` from the first call of ``TaskPool.sample`` (the iteration's tasks) to the return of the
loop's first ``checkpoint()`` that writes ``last.ckpt`` (the iteration's end), a real iteration with nothing patched
but its end. Every Python function entered in that interval is noted by its file. Two counts of ``rlanything_core``
files are printed:

- ``files``: every package file that ran between sampling and checkpoint (what a reader may have to open);
- ``batch_files``: the narrower path, only functions handed the iteration's data in one of its carriers (an argument,
  a local or ``self`` that is one of :data:`CARRIERS`): the files the data itself passes through, without what runs
  beside it (logging, the rank helpers, the pool's bookkeeping).

Nothing is timed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlanything_core"

__all__ = ["CARRIERS", "Crossed", "carrier_types", "crossed_files", "main"]

CARRIERS = (
    "rlanything_core.records:Episode",
    "rlanything_core.loop.protocol:Rollouts",
    "rlanything_core.types:StepBatch",
    "rlanything_core.types:RolloutBatch",
    "rlanything_core.types:TokenRows",
    "rlanything_core.types:TrainingRows",
    "rlanything_core.loop.iteration:JudgeTargets",
    "rlanything_core.loop.iteration:IterationData",
)
"""``module:class`` of the types that carry one iteration's data; those the package no longer defines are skipped."""


class _Stop(Exception):
    """Raised after the first checkpoint that writes: the iteration's data has arrived."""


@dataclass(frozen=True)
class Crossed:
    """The package files (relative to the repository) of one iteration, sampling to checkpoint."""

    files: list[str]
    """Every package file a function of which ran."""
    batch_files: list[str]
    """The files of the functions handed one of the :data:`CARRIERS`."""


def carrier_types(names: tuple[str, ...] = CARRIERS) -> tuple[type, ...]:
    """The classes of ``names`` (``module:class``) that exist."""
    found = []
    for name in names:
        module, _, cls = name.partition(":")
        found_cls = getattr(importlib.import_module(module), cls, None)
        if isinstance(found_cls, type):
            found.append(found_cls)
    return tuple(found)


def _in_package(seen: set[str]) -> list[str]:
    files = {Path(f).resolve() for f in seen if f and not f.startswith("<")}
    return sorted(f.relative_to(ROOT).as_posix() for f in files if f.is_relative_to(PACKAGE))


def _holds_carrier(frame: FrameType, carriers: tuple[type, ...]) -> bool:
    """Whether a local of ``frame`` (arguments and ``self`` included) is a carrier or a list/tuple starting with one."""
    for value in frame.f_locals.values():
        if isinstance(value, carriers):
            return True
        if type(value) in (list, tuple) and value and isinstance(value[0], carriers):  # plain sequences only
            return True
    return False


def crossed_files(overrides: list[str]) -> Crossed:
    """The package files one smoke iteration crosses from ``TaskPool.sample`` to its first written checkpoint."""
    from hydra import compose, initialize_config_dir

    from rlanything_core.adaptation.pool import TaskPool
    from rlanything_core.assembly import build_run
    from rlanything_core.assembly.agent import close_shared_env_pools
    from rlanything_core.conf import CONF_DIR

    carriers = carrier_types()
    sample_code = TaskPool.sample.__code__
    with tempfile.TemporaryDirectory(prefix="batch-path-") as tmp:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("train", overrides=[
                "+setting=alfworld", "+profile=smoke", "arm=full", "seed=0", "progress=false", "eval.at_start=false",
                f"run_dir={tmp}/run", *overrides,
            ])  # fmt: skip
        loop = build_run(cfg).loop
        every: set[str] = set()
        with_data: set[str] = set()
        recording = [False]

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if event != "call":
                return
            if not recording[0] and frame.f_code is sample_code:
                recording[0] = True  # the iteration's tasks are being drawn
            if recording[0]:
                every.add(frame.f_code.co_filename)
                if _holds_carrier(frame, carriers):
                    with_data.add(frame.f_code.co_filename)

        checkpoint: Callable[[], float] = loop.checkpoint

        def checkpoint_then_stop() -> float:
            seconds = checkpoint()
            if recording[0] and loop.saved:  # last.ckpt written: the iteration's data is in the checkpoint
                recording[0] = False
                raise _Stop
            return seconds

        loop.checkpoint = checkpoint_then_stop  # type: ignore[method-assign]
        loop.checkpoint_every = 1  # the first iteration's checkpoint writes, whatever the profile's interval
        sys.setprofile(profile)
        try:
            loop.run()
        except _Stop:
            pass
        else:
            raise SystemExit("the loop ended without sampling and writing a checkpoint: nothing was measured")
        finally:
            sys.setprofile(None)
            close_shared_env_pools()
    return Crossed(files=_in_package(every), batch_files=_in_package(with_data))


def main(argv: list[str] | None = None) -> None:
    """Print ``files=<count> batch_files=<count>`` (with ``--list``, both lists first)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print the files of both counts")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for the smoke run")
    args = parser.parse_args(argv)
    crossed = crossed_files(list(args.overrides))
    if args.list:
        batch = set(crossed.batch_files)
        for name in crossed.files:
            print(f"{'*' if name in batch else ' '} {name}")  # *: handed the iteration's data
    print(f"files={len(crossed.files)} batch_files={len(crossed.batch_files)}", flush=True)


if __name__ == "__main__":
    main()
