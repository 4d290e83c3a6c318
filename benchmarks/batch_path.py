"""How many package files one batch crosses from the loop's entry to the policy's ``optimizer.step()``.

    python -m benchmarks.batch_path                  # the ALFWorld smoke (full arm, seed 0)
    python -m benchmarks.batch_path --start rows     # from the rows stage (the batch's construction) instead
    python -m benchmarks.batch_path --start rows --follow-batch   # only where the batch itself is handed on
    python -m benchmarks.batch_path arm=policy ...   # more Hydra overrides for the run

Builds the smoke run as ``experiments/train.py`` does, then runs its loop under ``sys.setprofile``: from the
source's first ``collect`` call (or ``rows``, with ``--start rows``) to the policy optimizer's first ``step()``,
every Python function entered is noted by its file; the files of ``rlanything_core`` are printed, sorted, then their
count. With ``--follow-batch`` a function counts only when it is handed the batch in one of its forms (an argument
or ``self`` that is a ``RolloutBatch``, ``StepBatch``, ``IterationData``, ``TrainingRows`` or ``TokenRows``): the
files a reader follows the batch through, without what runs beside it in the same interval (the pool's adaptation,
the rewriter, logging). Nothing is timed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlanything_core"

__all__ = ["crossed_files", "main"]


class _Stop(Exception):
    """Raised from the policy's first optimizer step: the batch has arrived."""


def crossed_files(overrides: list[str], start_stage: str = "collect", *, follow_batch: bool = False) -> list[str]:
    """The package files (relative to the repository) one batch crosses.

    From the source's first ``start_stage`` call (``collect`` or ``rows``) to the policy's first optimizer step;
    with ``follow_batch``, only the functions handed the batch itself (see the module docstring).
    """
    if start_stage not in ("collect", "rows"):
        raise ValueError(f"start_stage: expected 'collect' or 'rows', got {start_stage!r}")
    sys.path.insert(0, str(ROOT))
    from hydra import compose, initialize_config_dir

    from rlanything_core.assembly import build_run
    from rlanything_core.assembly.agent import close_shared_env_pools
    from rlanything_core.conf import CONF_DIR
    from rlanything_core.loop.iteration import IterationData
    from rlanything_core.types import RolloutBatch, StepBatch, TokenRows, TrainingRows

    batch_types = (RolloutBatch, StepBatch, IterationData, TrainingRows, TokenRows)

    with tempfile.TemporaryDirectory(prefix="batch-path-") as tmp:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("train", overrides=[
                "+setting=alfworld", "+profile=smoke", "arm=full", "seed=0", "progress=false", "eval.at_start=false",
                f"run_dir={tmp}/run", *overrides,
            ])  # fmt: skip
        loop = build_run(cfg).loop
        loop.setup()
        seen: set[str] = set()
        recording = [False]

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if recording[0] and event == "call":
                if not follow_batch or any(isinstance(v, batch_types) for v in frame.f_locals.values()):
                    seen.add(frame.f_code.co_filename)

        source, optimizer = loop.source, loop.policy_update.optimizer
        first: Callable[..., Any] = getattr(source, start_stage)

        def start(*args: Any, **kwargs: Any) -> Any:
            recording[0] = True
            return first(*args, **kwargs)

        def stop(*args: Any, **kwargs: Any) -> Any:
            recording[0] = False
            raise _Stop

        setattr(source, start_stage, start)
        optimizer.step = stop
        sys.setprofile(profile)
        try:
            loop.run()
        except _Stop:
            pass
        else:
            raise SystemExit("the policy never stepped (no row in its band): try another seed or arm")
        finally:
            sys.setprofile(None)
            close_shared_env_pools()
    files = {Path(f).resolve() for f in seen if f and not f.startswith("<")}
    return sorted(str(f.relative_to(ROOT)) for f in files if f.is_relative_to(PACKAGE))


def main(argv: list[str] | None = None) -> None:
    """Print the files, then ``files=<count>``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", choices=["collect", "rows"], default="collect", help="the stage to count from")
    parser.add_argument("--follow-batch", action="store_true", help="count only functions handed the batch itself")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for the smoke run")
    args = parser.parse_args(argv)
    files = crossed_files(list(args.overrides), args.start, follow_batch=args.follow_batch)
    for name in files:
        print(name)
    print(f"files={len(files)}", flush=True)


if __name__ == "__main__":
    main()
