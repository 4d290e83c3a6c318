"""Train with the RLAnything loop: `python experiments/train.py +setting=alfworld [+profile=smoke] [arm=...] ...`.

The same app as the installed command `rlanything train ...` (``rlanything_core/assembly/train_app.py``), with the
configs shipped in the package (``rlanything_core/conf``). Resumable: rerunning the same command continues from
`<run_dir>/checkpoints/last.ckpt`. The last line printed is
`iterations=<int> policy_updates=<int> judge_updates=<int> accepted_tasks=<int> checkpoint=<path>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file (`python experiments/train.py`), Python puts experiments/ first on sys.path: put the repository root
# there instead, so that this checkout's rlanything_core is the one imported.
if __name__ == "__main__" and not __package__:
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from rlanything_core.assembly.train_app import main, run_training, summary_line  # noqa: E402

__all__ = ["main", "run_training", "summary_line"]

if __name__ == "__main__":
    main()
