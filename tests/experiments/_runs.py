"""Helpers to run experiments/train.py as a user would (a subprocess) and read what it left behind."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import torch

from rlanything_core.testing.processes import run_reaped

REPO = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(
    r"^iterations=(\d+) policy_updates=(\d+) judge_updates=(\d+) accepted_tasks=(\d+) checkpoint=(\S+)$"
)

# A small TextWorld run where a random tiny policy wins often enough to train: one-room quests of length 1, and
# near-uniform sampling (a randomly initialized model's likelihoods are arbitrary but very peaked; temperature 20
# flattens them, so the policy explores and the judge's m votes disagree, which is what gives both a signal).
FAST = [
    "+setting=textworld",
    "setting.train_quest_lengths=[1]",
    "setting.train_rooms=[1]",
    "setting.seeds_per_cell=2",
    "setting.nb_objects=3",
    "setting.eval_quest_lengths=[1]",
    "setting.max_steps=8",
    "setting.eval_max_steps=8",
    "model.temperature=20",
    "model.judge_temperature=20",
    "iterations=3",
    "tasks_per_iteration=2",
    "group_size=4",
    "eval.games=1",
    "eval.at_start=false",
    "progress=false",
]


def train_cmd(run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "experiments.train", *FAST, f"run_dir={run_dir}", *overrides]


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONUNBUFFERED"] = "1"
    out.setdefault("OMP_NUM_THREADS", "1")  # identical threading in every process: bitwise-comparable runs
    return out


def run(run_dir: Path, *overrides: str, timeout: float = 600) -> re.Match[str]:
    proc = run_reaped(train_cmd(run_dir, *overrides), cwd=REPO, env=env(), text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    match = SUMMARY.match(last)
    assert match, f"unexpected last line: {last!r}"
    return match


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    """The final weights, from a one-file or a sharded (torch.distributed.checkpoint) ``last.ckpt``."""
    from rlanything_core.lightning.checkpoint import read_checkpoint

    return dict(read_checkpoint(run_dir / "checkpoints" / "last.ckpt")["state_dict"])
