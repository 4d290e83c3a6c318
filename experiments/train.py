"""Train with the RLAnything loop: `python experiments/train.py +setting=alfworld [+profile=smoke] [arm=...] ...`.

Resumable: rerunning the same command continues from `<run_dir>/checkpoints/last.ckpt`. The last line printed is
`iterations=<int> policy_updates=<int> judge_updates=<int> accepted_tasks=<int> checkpoint=<path>`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

# Run as a file (`python experiments/train.py`), Python puts experiments/ first on sys.path; the scripts import each
# other as the package `experiments` (as tests and `python -m experiments.train` do), so put the repository root there
# instead: one name per module, and this checkout's rlanything_core.
if __name__ == "__main__" and not __package__:
    sys.path[0] = str(Path(__file__).resolve().parents[1])
OmegaConf.register_new_resolver("add", lambda a, b: int(a) + int(b), replace=True)

from experiments.builders import build  # noqa: E402
from experiments.config_checks import ConfigError  # noqa: E402
from experiments.eval_record import write_eval_outcomes  # noqa: E402
from rlanything_core.environment._io import CorruptFileError, atomic_write_json  # noqa: E402


def summary_line(run) -> str:  # type: ignore[no-untyped-def]
    """The machine-readable last line."""
    policy_updates = int(sum(e.get("policy/updates", 0.0) for e in run.module.update_history))
    judge_updates = int(sum(e.get("judge/updates", 0.0) for e in run.module.update_history))
    accepted = len(run.datamodule.driver.pool.accepted_ids())
    return (
        f"iterations={run.datamodule.completed} policy_updates={policy_updates} judge_updates={judge_updates} "
        f"accepted_tasks={accepted} checkpoint={run.checkpoint.last}"
    )


def evaluate_only(run) -> dict[str, float] | None:  # type: ignore[no-untyped-def]
    """Evaluate the run's models as they are (no update) and return the metrics (``None`` on ranks that did not
    evaluate: rank 0 evaluates alone unless the evaluator is sharded).

    Through ``trainer.test`` (``AgentModule.test_step``), so that Lightning sets the module up exactly as a fit does:
    it launches the other ranks, runs ``configure_model`` (FSDP2 shards; ranks that built the models on the meta
    device receive rank 0's weights) and puts the module on the strategy's device. Calling the evaluator directly
    skipped all of that: rank 0 alone on the CPU models, other ranks evaluating meta tensors.
    """
    # one batch: test_step evaluates once
    run.trainer.test(run.module, dataloaders=range(1), verbose=False)
    return run.module.test_metrics  # type: ignore[no-any-return]


def run_training(cfg: DictConfig):  # type: ignore[no-untyped-def]
    """Build ``cfg``'s run, then fit it (resuming its last checkpoint) or, with ``eval_only``, evaluate the models as
    they are and write ``<run_dir>/eval.json``. Returns the run. Raises :class:`ConfigError` before any work."""
    run = build(cfg)
    if cfg.get("eval_only", False):  # the models as they are, no update ("before optimization")
        metrics = evaluate_only(run)
        if run.trainer.is_global_zero:
            atomic_write_json(run.run_dir / "eval.json", metrics or {})
            write_eval_outcomes(run.run_dir, run.module.evaluator, 0)
        return run
    run.trainer.fit(run.module, datamodule=run.datamodule, ckpt_path=str(run.resume_from) if run.resume_from else None)
    completed = int(run.datamodule.completed)
    if run.module.evaluator is not None and not run.module.evaluations and completed >= int(cfg.iterations):
        # resumed from the last iteration's checkpoint: Lightning trains nothing and skips on_train_end, so a run
        # killed during its final evaluation gets that evaluation here
        run.module.evaluate(completed)
        for logger in run.module.loggers:
            logger.save()
    if run.module.evaluations and run.trainer.is_global_zero:  # the final evaluation's episodes (paired statistics)
        write_eval_outcomes(run.run_dir, run.module.evaluator, int(run.datamodule.completed))
    return run


@hydra.main(config_path="conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Build (after validating the config), fit, print the summary line.

    A bad config or a damaged persisted file (checkpoint, metrics, pool state or snapshot) ends the run with one
    ``ERROR:`` line naming it and what to do, and exit status 2 (no traceback).
    """
    os.chdir(hydra.utils.get_original_cwd())
    try:
        run = run_training(cfg)
    except (ConfigError, CorruptFileError) as err:
        print(f"ERROR: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    if not run.trainer.is_global_zero:
        return
    if cfg.get("eval_only", False):
        print((run.run_dir / "eval.json").read_text(), flush=True)
    else:
        print(summary_line(run), flush=True)


if __name__ == "__main__":
    main()
