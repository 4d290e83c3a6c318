"""Disk and CPU per ALFWorld engine start, with fast-downward's library copy handed on or one copy per engine.

    python -m benchmarks.downward_copies --games 40

Starts, resets and closes one engine after another on the first ``--games`` games of ``valid_seen`` (what the step
records' expert replays do once per episode), twice in this process, side by side: ``textworld`` with TextWorld's own
``fast_downward.load_lib`` (a new copy of ``libdownward.so`` per engine, which stays mapped, and on the temporary
folder's disk, until the process exits), ``handed on`` with ``envs/alfworld/downward_libraries.py``. Prints, per mode,
the CPU seconds per engine, the copies left mapped and the disk they hold, and the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["main", "mapped_copies", "measure"]


def mapped_copies() -> int:
    """Deleted ``libdownward.so`` copies this process maps (each holds the library's size on disk until exit)."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return len({line.split()[-2] for line in maps if line.endswith("(deleted)") and "libdownward.so" in line})


@contextlib.contextmanager
def textworld_load_lib() -> Iterator[None]:
    """TextWorld's own ``load_lib`` and ``PddlEnv`` methods inside (the hand-on installed around)."""
    import fast_downward
    from textworld.envs.pddl.pddl import PddlEnv

    from rlanything_core.envs.alfworld.downward_libraries import reuse_downward_libraries

    reuse_downward_libraries()
    saved = {"load_lib": fast_downward.load_lib}
    methods = {m: getattr(PddlEnv, m) for m in ("reset", "load", "step", "close")}
    fast_downward.load_lib = inspect.unwrap(fast_downward.load_lib)
    for name, method in methods.items():
        setattr(PddlEnv, name, inspect.unwrap(method))
    try:
        yield
    finally:
        fast_downward.load_lib = saved["load_lib"]
        for name, method in methods.items():
            setattr(PddlEnv, name, method)


def measure(games: list[Path]) -> dict[str, float]:
    """Start, reset and close an engine per game, one after another: CPU s per engine and copies left mapped."""
    from rlanything_core.envs.alfworld import start_engine

    before = mapped_copies()
    started = time.process_time()
    for game in games:
        engine = start_engine(game)
        engine.reset()
        engine.close()
    return {"cpu_s": (time.process_time() - started) / len(games), "copies": float(mapped_copies() - before)}


def main(argv: list[str] | None = None) -> None:
    """Measure both modes side by side (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=40, help="engines started per mode (default: 40)")
    args = parser.parse_args(argv)
    if args.games < 1:
        raise SystemExit(f"--games: expected >= 1, got {args.games}")
    import fast_downward

    from rlanything_core.envs.alfworld import list_games, start_engine

    games = [g.game_file for g in list_games("valid_seen")[: args.games]]
    start_engine(games[0]).close()  # the speed-ups installed
    measure(games)  # warm: every game's logic parse and PDDL translations stored, as in a run's later episodes
    size_mb = os.path.getsize(fast_downward.interface.DOWNWARD_LIB_PATH) / 2**20
    with textworld_load_lib():
        old = measure(games)
    new = measure(games)
    print(f"{args.games} engines started, reset and closed one after another (valid_seen); library {size_mb:.1f} MiB")
    for name, m in (("textworld", old), ("handed on", new)):
        print(f"  {name:<10} CPU s per engine {m['cpu_s']:.3f}   copies left mapped {m['copies']:.0f}   "
              f"disk held {m['copies'] * size_mb:.0f} MiB")  # fmt: skip
    print(f"  handed on / textworld: CPU {new['cpu_s'] / old['cpu_s']:.2f}x, copies {new['copies']:.0f} vs "
          f"{old['copies']:.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
