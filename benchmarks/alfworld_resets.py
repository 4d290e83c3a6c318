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

``--loads`` measures instead what a new process pays to *load* games (each run of the ablation is a new process),
the disk caches warm, side by side in one invocation: ``old`` without the stored logic parse (what a load cost
before ``engine_cache.memoize_logic_parsing``), ``new`` with it, alternating fresh processes; it prints CPU seconds
per load of each and their ratio::

    python -m benchmarks.alfworld_resets --loads --games 40 --rounds 2
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

__all__ = ["main", "time_loads", "time_resets"]


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


def time_loads(games: int, split: str, stored_parse: bool) -> dict[str, float]:
    """In this process: load (and reset once) the first ``games`` games of ``split``; CPU seconds per game."""
    from rlanything_core.envs.alfworld import env as env_module
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import start_engine

    if not stored_parse:  # the speed-ups are installed at the first engine start (env.speed_up_engine): not this one
        env_module.memoize_logic_parsing = lambda: None  # type: ignore[assignment]
    listed = list_games(split, None)[:games]
    start_engine(listed[0].game_file).reset()  # imports and first-call costs, outside the measurement
    start = time.process_time()
    for g in listed:
        engine = start_engine(g.game_file)
        engine.reset()
        engine.close()
    return {"cpu_s_per_load": (time.process_time() - start) / len(listed)}


def _compare_loads(args: argparse.Namespace) -> None:
    """Alternate old/new fresh processes over one warm disk cache; print the mean CPU s per load and the ratio."""
    base = [sys.executable, "-m", "benchmarks.alfworld_resets", "--games", str(args.games), "--split", args.split]
    totals = {"old": 0.0, "new": 0.0}
    with tempfile.TemporaryDirectory(prefix="alfworld-loads-") as cache:
        env = dict(os.environ, RLANYTHING_CACHE=cache)
        subprocess.run([*base, "--load-worker", "new"], check=True, capture_output=True, env=env)  # fills the disk
        for r in range(args.rounds):
            for variant in (("old", "new") if r % 2 == 0 else ("new", "old")):
                out = subprocess.run([*base, "--load-worker", variant], check=True, capture_output=True, text=True,
                                     env=env).stdout  # fmt: skip
                totals[variant] += json.loads(out.splitlines()[-1])["cpu_s_per_load"] / args.rounds
    print(f"{args.games} {args.split} games loaded by a new process (disk caches warm), {args.rounds} rounds: old "
          f"{totals['old']:.3f} CPU s/load, new {totals['new']:.3f} CPU s/load; old/new = "
          f"{totals['old'] / totals['new']:.2f}")


def main(argv: list[str] | None = None) -> None:
    """Print one line per translation-cache size, each measured in its own process."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=80)
    p.add_argument("--split", default="valid_seen")
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 1024])
    p.add_argument("--loads", action="store_true", help="compare game loads with and without the stored parse")
    p.add_argument("--rounds", type=int, default=2, help="with --loads: processes per variant")
    p.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--load-worker", choices=["old", "new"], default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.load_worker:
        print(json.dumps(time_loads(args.games, args.split, args.load_worker == "new")))
        return
    if args.loads:
        _compare_loads(args)
        return
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
