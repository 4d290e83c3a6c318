"""CPU seconds of the planner's probe labels: planned (every run, before) against read back from the label store.

    python -m benchmarks.stored_labels [--games 8] [--steps 30] [--split valid_seen]

Plays one seeded random episode of ``--steps`` admissible commands on each of the first ``--games`` games (a probe
set's shape: the ablation labels 4 episodes of up to 30 steps per split), then, side by side in this process: the
planner's labels with its plan cache emptied (what a run without the store pays), the same through
:class:`~rlanything_core.loop.oracle_labels.StoredLabels` into an empty folder (the first run: plans and stores), and
again (every later arm, seed or run: reads). Prints CPU seconds of each, the ratio planned / read, and whether all
three gave the same labels.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print one line per pass and the ratio."""
    from rlanything_core.digests import file_digest
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import AlfworldEnv
    from rlanything_core.envs.alfworld.oracle import clear_plan_cache, planner_version
    from rlanything_core.loop.oracle_labels import StoredLabels
    from rlanything_core.settings.alfworld import alfworld_oracle

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--split", default="valid_seen")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    episodes: list[tuple[str, list[str]]] = []
    for i, game in enumerate(list_games(args.split)[: args.games]):
        env, rng = AlfworldEnv(game, max_episode_steps=args.steps), random.Random(args.seed + i)
        admissible, actions = env.reset().admissible_actions, []
        for _ in range(args.steps):
            actions.append(rng.choice(admissible))
            res = env.step(actions[-1])
            if res.done:
                break
            admissible = res.admissible_actions
        env.close()
        episodes.append((str(game.game_file), actions))

    def timed(oracle: object) -> tuple[float, list[list[int]]]:
        clear_plan_cache()
        start = time.process_time()
        labels = [oracle(game, actions) for game, actions in episodes]  # type: ignore[operator]
        return time.process_time() - start, labels

    with tempfile.TemporaryDirectory(prefix="stored-labels-") as folder:
        stored = StoredLabels(alfworld_oracle, folder, version=f"{planner_version()}:progress+1", task_key=file_digest)
        planned_s, planned = timed(alfworld_oracle)
        first_s, first = timed(stored)
        read_s, read = timed(stored)
    steps = sum(len(a) for _, a in episodes)
    print(f"{len(episodes)} episodes, {steps} steps: planned {planned_s:.2f} CPU s, stored (first run) {first_s:.2f}, "
          f"read back {read_s:.3f}; planned/read = {planned_s / max(read_s, 1e-9):.0f}x; "
          f"same labels: {planned == first == read}")


if __name__ == "__main__":
    main()
