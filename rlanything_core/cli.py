"""The ``rlanything`` command: ``rlanything train|evaluate|ablate [Hydra overrides ...]``.

- ``train``: compose ``train.yaml`` (shipped in the package) with the overrides, build the run, train, print the
  summary line (:mod:`rlanything_core.assembly.train_app`); e.g. ``rlanything train +setting=alfworld +profile=smoke``.
- ``evaluate``: the same run evaluated as it is (``eval_only=true``): ``<run_dir>/eval.json``.
- ``ablate``: the paper's ablation (:mod:`rlanything_core.ablation.app`); results under ``results_root`` (relative:
  to the checkout when run from one, else to the current directory), e.g. ``rlanything ablate +profile=smoke``.

Also ``python -m rlanything_core ...``. Data: ``RLANYTHING_DATA`` (:mod:`rlanything_core.data_dir`). A missing extra
or a bad config ends with one ``ERROR:`` line and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rlanything_core.extras import MissingExtraError, require_extra

__all__ = ["COMMANDS", "main", "usage"]

COMMANDS = {
    "train": "train a run (resumes its run_dir): rlanything train +setting=alfworld [+profile=smoke] [arm=full] ...",
    "evaluate": "evaluate a run's models as they are (eval_only=true): rlanything evaluate +setting=alfworld ...",
    "ablate": "the paper's ablation (Table 1): rlanything ablate [+setting=alfworld] [+profile=smoke] ...",
}


def usage() -> str:
    """The help text."""
    lines = ["usage: rlanything {train,evaluate,ablate} [Hydra overrides ...]", ""]
    lines += [f"  {name:<9} {text}" for name, text in COMMANDS.items()]
    lines += ["", "Data: $RLANYTHING_DATA (default ../shared). Configs: rlanything_core/conf (pkg://rlanything_core.conf)."]
    return "\n".join(lines)


def _fail(message: str) -> int:
    print(f"ERROR: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv[1:]``); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    command, overrides = args[0], args[1:]
    if command not in COMMANDS:
        return _fail(f"unknown command {command!r}; choose one of {', '.join(COMMANDS)}\n{usage()}")
    try:
        require_extra("loop", f"rlanything {command}")
        require_extra("llm", f"rlanything {command}")
    except MissingExtraError as err:
        return _fail(str(err))
    if command == "evaluate" and not any(o.split("=", 1)[0].lstrip("+") == "eval_only" for o in overrides):
        overrides.append("eval_only=true")
    sys.argv = [f"rlanything {command}", *overrides]  # Hydra reads its overrides from sys.argv
    try:
        if command == "ablate":
            from rlanything_core.ablation.app import cli as ablate_main

            ablate_main()
        else:
            from rlanything_core.assembly.train_app import main as train_main

            train_main()
    except SystemExit as done:  # Hydra's own exits (--help, a composition error) and the app's ERROR: exits
        return done.code if isinstance(done.code, int) else (0 if done.code is None else _fail(str(done.code)))
    return 0

