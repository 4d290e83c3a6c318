"""Train with the RLAnything loop: ``python -m experiments.train +setting=alfworld [+profile=smoke] [arm=...] ...``.

The same app as the installed command ``rlanything train ...`` (:mod:`rlanything_core.assembly.train_app`), with the
configs shipped in the package (``rlanything_core/conf``). Resumable: rerunning the same command continues from
``<run_dir>/checkpoints/last.ckpt``. The last line printed is
``iterations=<int> policy_updates=<int> judge_updates=<int> accepted_tasks=<int> checkpoint=<path>``.
"""

from __future__ import annotations

from rlanything_core.assembly.train_app import main, run_training, summary_line

__all__ = ["main", "run_training", "summary_line"]

if __name__ == "__main__":
    main()
