"""Seconds per ALFWorld reset when an evaluation's games come round again, by PDDL-translation cache size.

An evaluation resets its games in the same order every time. ``engine_cache.memoize_pddl_translation`` keeps the
translations in an LRU; when the LRU is smaller than the cycle (about two translations per game), every reset misses
and translates the game again (~1 s). Each cache size runs in a fresh process (the LRU is installed once per
process), resetting the same games twice, side by side in one invocation::

    python -m benchmarks.alfworld_resets --games 80 --sizes 128 1024

prints, per size, the first pass (cold) and the second pass (what every later evaluation pays) and their ratio.

The translations also persist on disk (``$RLANYTHING_CACHE/pddl2sas``), so a new process (each run of the ablation is
one) starts warm. Each size runs twice against one fresh disk cache: ``disk=empty`` translates, ``disk=warm`` is the
next process, whose first pass reads what the first process stored.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

__all__ = ["main", "time_resets"]


def time_resets(games: int, translations: int, split: str, passes: int = 2) -> dict[str, float]:
    """In this process: reset the first ``games`` games of ``split`` ``passes`` times; seconds per reset per pass."""
    from rlanything_core.envs.alfworld import engine_cache
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import AlfworldEnv

    engine_cache._TRANSLATIONS = translations  # read when the memoization is installed, at the first engine start
    listed = list_games(split, None)[:games]
    out: dict[str, float] = {}
    for p in range(passes):
        start = time.perf_counter()
        envs = [AlfworldEnv(g) for g in listed]
        for env in envs:
            env.reset()
        for env in envs:
            env.close()
        out[f"pass{p}_s_per_reset"] = (time.perf_counter() - start) / len(listed)
    out["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv: list[str] | None = None) -> None:
    """Print one line per translation-cache size, each measured in its own process."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=80)
    p.add_argument("--split", default="valid_seen")
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 1024])
    p.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(time_resets(args.games, args.worker, args.split)))
        return
    for size in args.sizes:
        cmd = [sys.executable, "-m", "benchmarks.alfworld_resets", "--games", str(args.games), "--split", args.split,
               "--worker", str(size)]  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="alfworld-resets-") as cache:
            for disk in ("empty", "warm"):
                env = dict(os.environ, RLANYTHING_CACHE=cache)
                out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
                r = json.loads(out.splitlines()[-1])
                first, second = r["pass0_s_per_reset"], r["pass1_s_per_reset"]
                print(f"translations={size} disk={disk}: {args.games} games, first pass {first:.3f} s/reset, second "
                      f"pass {second:.3f} s/reset (x{first / second:.1f} faster), max RSS {r['max_rss_mib']:.0f} MiB",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
