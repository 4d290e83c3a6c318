"""The training app: compose ``train.yaml`` (shipped in the package), build the run, run it, print the summary line.

``rlanything train +setting=alfworld [+profile=smoke] [arm=...] ...`` (:mod:`rlanything_core.cli`), ``python -m
rlanything_core train ...`` and, in a checkout, ``python -m experiments.train ...`` all call :func:`main`. Resumable:
rerunning the same command continues from ``<run_dir>/checkpoints/last.ckpt``. The last line printed is
``iterations=<int> policy_updates=<int> judge_updates=<int> accepted_tasks=<int> checkpoint=<path>``; with
``eval_only=true`` (``rlanything evaluate``) the models are evaluated as they are and ``<run_dir>/eval.json`` printed.
"""

from __future__ import annotations

import errno
import os
import sys

import hydra
from omegaconf import DictConfig

from rlanything_core.assembly.build import build_run
from rlanything_core.assembly.eval_record import write_eval_outcomes
from rlanything_core.assembly.trainer import Run
from rlanything_core.conf import SEARCH_PATH
from rlanything_core.config import ConfigError
from rlanything_core.files import CorruptFileError, atomic_write_json
from rlanything_core.progress import LOGGER, log_to_file

__all__ = ["error_line", "main", "run_training", "summary_line"]

_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOSPC, errno.EEXIST}
"""The file system errors that mean "this place cannot be written"."""


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
    """Build ``cfg``'s run, then run its loop (resuming its last checkpoint) or evaluate it as it is.

    With ``eval_only``, the models are evaluated as they are (``RLAnythingLoop.evaluate_only``: set up as a run sets
    them up, on every rank) and ``<run_dir>/eval.json`` is written. Returns the run. Raises :class:`ConfigError`
    before any work.
    """
    run = build_run(cfg)
    loop = run.loop
    # the progress lines of the evaluation, the iterations and the warm start also go to the run's own log
    handler = log_to_file(run.run_dir / "logs" / "progress.log") if run.is_global_zero else None
    try:
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
    finally:
        if handler is not None:
            LOGGER.removeHandler(handler)
            handler.close()


def error_line(err: BaseException) -> str:
    """The one line a run error ends with: ``ERROR: <what, where, what to do>``."""
    if isinstance(err, OSError) and err.filename:  # from the file system (CorruptFileError is a ValueError)
        if err.errno in _UNWRITABLE:  # e.g. an unwritable run_dir, a full disk
            return f"ERROR: {err.strerror} ({err.filename}): choose a writable place (run_dir=...) or free the disk"
        return f"ERROR: {err.strerror}: {err.filename}"
    return f"ERROR: {err}"


@hydra.main(config_path=SEARCH_PATH, config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Build (after validating the config), run the loop, print the summary line.

    A bad config, a damaged persisted file (checkpoint, metrics, pool state or snapshot) or a file system error (an
    unwritable ``run_dir``, a full disk) ends the run with one ``ERROR:`` line naming it and what to do, and exit
    status 2 (no traceback).
    """
    os.chdir(hydra.utils.get_original_cwd())
    try:
        run = run_training(cfg)
    except (ConfigError, CorruptFileError, OSError) as err:
        print(error_line(err), file=sys.stderr)
        raise SystemExit(2) from None
    if not run.is_global_zero:
        return
    if cfg.get("eval_only", False):
        print((run.run_dir / "eval.json").read_text(), flush=True)
    else:
        print(summary_line(run), flush=True)
