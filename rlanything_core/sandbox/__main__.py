"""Command line: run one program in the sandbox and print one JSON object.

``python -m rlanything_core.sandbox PROGRAM.py [--stdin FILE] [--expected FILE] [--time-limit S] [--memory-mb M]``

Prints ``{"verdict", "exit_code", "stdout", "stderr", "wall_s", "bwrap", "detail"}``. Without ``--expected`` the
verdict is ``passed`` when the program exits 0 within the limits. Exit status: 0 when passed, 1 otherwise, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from rlanything_core.sandbox.compare import OutputJudge
from rlanything_core.sandbox.config import SandboxConfig, StdinTest
from rlanything_core.sandbox.sandbox import Sandbox

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the program once, print the JSON result."""
    parser = argparse.ArgumentParser(prog="python -m rlanything_core.sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("program", type=Path, help="Python source file to run (untrusted)")
    parser.add_argument("--stdin", type=Path, default=None, help="file fed to the program's stdin (binary)")
    parser.add_argument("--expected", type=Path, default=None, help="expected stdout (whitespace-normalized compare)")
    parser.add_argument("--time-limit", type=float, default=4.0, help="wall-clock seconds (default 4)")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space limit in MiB (default 1024)")
    parser.add_argument("--float-tol", type=float, default=None, help="absolute and relative float tolerance")
    parser.add_argument("--no-bwrap", action="store_true", help="do not use bubblewrap (weaker; warns)")
    args = parser.parse_args(argv)
    for name in ("program", "stdin", "expected"):
        path = getattr(args, name)
        if path is not None and not path.is_file():
            parser.error(f"--{name} file not found: {path}" if name != "program" else f"program not found: {path}")
    try:
        config = SandboxConfig(
            time_limit_s=args.time_limit, memory_mb=args.memory_mb, use_bwrap=False if args.no_bwrap else None
        )
    except ValueError as exc:
        parser.error(str(exc))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        try:
            sandbox = Sandbox(config)
        except RuntimeError as exc:  # no way to isolate programs here (no bubblewrap, not root)
            parser.error(str(exc))
    test = StdinTest(
        stdin=args.stdin.read_bytes() if args.stdin else b"",
        expected=args.expected.read_text(encoding="utf-8") if args.expected else None,
    )
    judge = OutputJudge.kattis(args.float_tol, case_sensitive=True) if args.float_tol is not None else OutputJudge()
    result = sandbox.run(args.program.read_text(encoding="utf-8", errors="replace"), [test], judge=judge)
    record = result.tests[0].to_dict()
    record["bwrap"] = result.bwrap
    if result.error:
        record["error"] = result.error
    json.dump(record, sys.stdout)
    sys.stdout.write("\n")
    return 0 if result.all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
