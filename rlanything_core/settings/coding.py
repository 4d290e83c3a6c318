"""Coding's parts: stdin training problems, evaluation on LeetCode (LiveCodeBench v5 window) or on LiveBench.

The coding setting of arXiv 2602.02488 (Sec. 4), trained on Kick Start and CodeContests problems.
:class:`CodingTasks` is what ``rlanything_core/conf/setting/coding.yaml`` names (``setting.parts.environment``), built
from paths and counts; it never reads a config. Its episodes are single-step (a program, run in the sandbox against
ground-truth tests), so it has no environment factory: the coding loop (``rlanything_core.loop.coding_driver``) plays
its roots, and :class:`~rlanything_core.loop.coding_evaluation.CodingEvaluator` its splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.envs.coding.livecodebench import load_livebench
from rlanything_core.envs.coding.loaders import default_shared_dir, load_codecontests, load_kickstart, load_leetcode
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.coding_driver import coding_spec
from rlanything_core.loop.coding_evaluation import CodingEvalSplit
from rlanything_core.sandbox import Sandbox
from rlanything_core.settings.protocol import SettingError

__all__ = ["CODING_FILES", "EVAL_SETS", "CodingTasks", "first"]

CODING_FILES = {
    "kickstart": "kickstart/problems.jsonl",
    "codecontests": "codecontests_test/problems.jsonl",
    "leetcode_lcb": "leetcodedataset_v0.3.1_test/problems.jsonl",
}
"""Each problem set's file under the coding data folder (``leetcode_lcb``: the evaluation problems)."""

TRAIN_LOADERS = {"kickstart": load_kickstart, "codecontests": load_codecontests}

EVAL_SETS = ("leetcode_lcb", "livebench")
"""The evaluation sets: LeetCode problems flagged ``also_in_lcb_v5_window``, or a LiveBench file."""


def first(items: Sequence[Any], count: int | None) -> list[Any]:
    """The first ``count`` items (``count`` ``None``: all of them, e.g. a whole evaluation split)."""
    return list(items) if count is None else list(items)[: int(count)]


@dataclass(frozen=True)
class CodingTasks:
    """Coding as a setting: its problems, the pool's roots and the evaluation split.

    Attributes:
        data_dir: the coding data folder (``None``: ``$RLANYTHING_DATA/coding``, else ``../shared/coding``
            beside the repository), holding :data:`CODING_FILES`.
        train_sets: the training problem sets, interleaved (``kickstart``, ``codecontests``).
        max_statement_chars: training problems with longer statements are skipped (small models' context).
        train_problems: the first N training problems (shortest statements first; ``None``: all).
        gt_tests: ground-truth tests per training problem.
        eval_set: one of :data:`EVAL_SETS` (``livebench`` reads :attr:`livebench_file` where it is given).
        livebench_file: a LiveBench coding ``question.jsonl``, or ``None``.
        eval_problems: the first N evaluation problems (``None``: all).
    """

    data_dir: str | None = None
    train_sets: Sequence[str] = ("kickstart", "codecontests")
    max_statement_chars: int = 6000
    train_problems: int | None = None
    gt_tests: int = 8
    eval_set: str = "leetcode_lcb"
    livebench_file: str | None = None
    eval_problems: int | None = None

    @property
    def root(self) -> Path:
        """The coding data folder (see :attr:`data_dir`)."""
        return Path(self.data_dir) if self.data_dir is not None else default_shared_dir() / "coding"

    def check(self) -> None:
        """The sets are known and their files exist, before any work.

        Raises:
            SettingError: naming ``train_sets``, ``eval_set``, ``data_dir`` or ``livebench_file``.
        """
        unknown = sorted(set(map(str, self.train_sets)) - set(TRAIN_LOADERS))
        if unknown:
            raise SettingError("train_sets", f"unknown sets {unknown}", f"use some of {sorted(TRAIN_LOADERS)}")
        if self.eval_set not in EVAL_SETS:
            raise SettingError("eval_set", f"unknown {self.eval_set!r}", f"use one of {list(EVAL_SETS)}")
        for name in [*map(str, self.train_sets), "leetcode_lcb"]:
            if not (self.root / CODING_FILES[name]).is_file():
                raise SettingError("data_dir", f"{self.root / CODING_FILES[name]} does not exist",
                                   "point it (or RLANYTHING_DATA/coding) at the offline coding data")  # fmt: skip
        if self.livebench_file is not None and not Path(self.livebench_file).is_file():
            raise SettingError("livebench_file", f"{self.livebench_file!r} does not exist",
                               "point it at a question.jsonl or null")  # fmt: skip

    def problems(self) -> tuple[list[Any], list[Any]]:
        """``(training problems, evaluation problems)``.

        The training problems: stdin problems of the sets interleaved, shortest statements first.
        """
        per_set = [
            sorted(
                (p for p in TRAIN_LOADERS[str(n)](self.root / CODING_FILES[str(n)])
                 if len(p.prompt) <= self.max_statement_chars),
                key=lambda p: (len(p.prompt), p.id),
            )
            for n in self.train_sets
        ]  # fmt: skip
        train = first([p for group in zip(*per_set) for p in group], self.train_problems)
        if self.eval_set == "livebench" and self.livebench_file is not None:
            evals = load_livebench(self.livebench_file)
        else:
            evals = [p for p in load_leetcode(self.root / CODING_FILES["leetcode_lcb"]) if p.also_in_lcb_v5_window]
        return train, first(evals, self.eval_problems)

    def roots_and_splits(self, sandbox: Sandbox) -> tuple[list[TaskSpec], list[CodingEvalSplit]]:
        """The pool's roots (each with its first :attr:`gt_tests` tests) and the evaluation split run in ``sandbox``.

        The problems are read once for both.
        """
        train, evals = self.problems()
        roots = [coding_spec(p, max_tests=int(self.gt_tests)) for p in train]
        split_name = "livebench" if self.eval_set == "livebench" else "lcb_v5"
        return roots, [CodingEvalSplit(split_name, tuple(CodingTask(p, sandbox) for p in evals))]
