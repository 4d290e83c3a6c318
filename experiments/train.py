"""Train with the RLAnything loop: `python experiments/train.py +setting=alfworld [+profile=smoke] [arm=...] ...`.

Resumable: rerunning the same command continues from `<run_dir>/checkpoints/last.ckpt`. The last line printed is
`iterations=<int> policy_updates=<int> judge_updates=<int> accepted_tasks=<int> checkpoint=<path>`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

# Run as a file (`python experiments/train.py`), Python puts experiments/ first on sys.path; the scripts import each
# other as the package `experiments` (as tests and `python -m experiments.train` do), so put the repository root there
# instead: one name per module, and this checkout's rlanything_core.
if __name__ == "__main__" and not __package__:
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from experiments.eval_record import write_eval_outcomes  # noqa: E402
from rlanything_core.assembly import Run, build_run  # noqa: E402
from rlanything_core.config import ConfigError  # noqa: E402
from rlanything_core.files import CorruptFileError, atomic_write_json  # noqa: E402


def summary_line(run: Run) -> str:
    """The machine-readable last line."""
    loop = run.loop
    policy_updates = int(sum(e.get("policy/updates", 0.0) for e in loop.update_history))
    judge_updates = int(sum(e.get("judge/updates", 0.0) for e in loop.update_history))
    accepted = len(loop.driver.pool.accepted_ids())
    return (
        f"iterations={loop.completed} policy_updates={policy_updates} judge_updates={judge_updates} "
        f"accepted_tasks={accepted} checkpoint={loop.last}"
    )


def run_training(cfg: DictConfig) -> Run:
    """Build ``cfg``'s run, then run its loop (resuming its last checkpoint) or, with ``eval_only``, evaluate the
    models as they are (``RLAnythingLoop.evaluate_only``: set up as a run sets them up, on every rank) and write
    ``<run_dir>/eval.json``. Returns the run. Raises :class:`ConfigError` before any work."""
    run = build_run(cfg)
    loop = run.loop
    if cfg.get("eval_only", False):  # the models as they are, no update ("before optimization")
        metrics = loop.evaluate_only()
        if run.is_global_zero:
            atomic_write_json(run.run_dir / "eval.json", metrics or {})
            write_eval_outcomes(run.run_dir, loop.evaluator, 0)
        return run
    loop.run()
    if loop.evaluations and run.is_global_zero:  # the final evaluation's episodes (paired statistics)
        write_eval_outcomes(run.run_dir, loop.evaluator, loop.completed)
    return run


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Build (after validating the config), run the loop, print the summary line.

    A bad config or a damaged persisted file (checkpoint, metrics, pool state or snapshot) ends the run with one
    ``ERROR:`` line naming it and what to do, and exit status 2 (no traceback).
    """
    os.chdir(hydra.utils.get_original_cwd())
    try:
        run = run_training(cfg)
    except (ConfigError, CorruptFileError) as err:
        print(f"ERROR: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    if not run.is_global_zero:
        return
    if cfg.get("eval_only", False):
        print((run.run_dir / "eval.json").read_text(), flush=True)
    else:
        print(summary_line(run), flush=True)


if __name__ == "__main__":
    main()
