"""Digest of the trained weights of short fixed-seed runs: a refactor that changes no behaviour leaves them unchanged.

    python -m benchmarks.weights_digest                       # the ALFWorld smoke, arms outcome_only, full, step_only
    python -m benchmarks.weights_digest --arms full --setting coding

Each arm runs ``experiments/train.py +setting=<setting> +profile=smoke arm=<arm> seed=0`` in a fresh temporary run
folder (so nothing resumes), then prints one line per arm: the SHA-256 of the policy's and of the judge's parameters
as saved in the last checkpoint (name, dtype, shape and bytes of every tensor, in name order), and the run's summary
line. Compare the lines printed before and after a change: equal digests mean bit-identical weights.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from rlanything_core.lightning.checkpoint import read_checkpoint

__all__ = ["digest", "main"]

ROOT = Path(__file__).resolve().parents[1]


def digest(state_dict: dict[str, torch.Tensor], prefix: str) -> str:
    """SHA-256 over the tensors of ``state_dict`` whose names start with ``prefix`` (name, dtype, shape, bytes)."""
    h = hashlib.sha256()
    names = sorted(k for k in state_dict if k.startswith(prefix))
    for name in names:
        t = state_dict[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return f"{h.hexdigest()[:16]} ({len(names)} tensors)" if names else "-"


def run_arm(setting: str, arm: str, extra: list[str]) -> str:
    """Train one arm of the smoke in a fresh folder; its digest line."""
    with tempfile.TemporaryDirectory(prefix="weights-digest-") as tmp:
        run_dir = Path(tmp) / "run"
        cmd = [
            sys.executable, "-m", "experiments.train", f"+setting={setting}", "+profile=smoke", f"arm={arm}", "seed=0",
            f"run_dir={run_dir}", "progress=false", *extra,
        ]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{arm}: train.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
        summary = done.stdout.strip().splitlines()[-1]
        state = read_checkpoint(run_dir / "checkpoints" / "last.ckpt")["state_dict"]
        weights = f"policy {digest(state, 'policy.')} judge {digest(state, 'judge.')}"
        return f"{setting} {arm}: {weights} | {summary.split(' checkpoint=')[0]}"


def main(argv: list[str] | None = None) -> None:
    """Print one digest line per arm."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", default="alfworld")
    parser.add_argument("--arms", nargs="+", default=["outcome_only", "full", "step_only"])
    parser.add_argument("overrides", nargs="*", help="more Hydra overrides for train.py")
    args = parser.parse_args(argv)
    for arm in args.arms:
        print(run_arm(args.setting, arm, args.overrides), flush=True)


if __name__ == "__main__":
    main()
