"""The LightningModule of every setting: the shared update step plus the setting's evaluation. Wiring only.

What a setting evaluates is its evaluator's (``rlanything_core.loop.evaluation.AgentEvaluator``: success rate and
average steps per split, the judge's outcome accuracy and, with an oracle such as ALFWorld's planner, its process
accuracy; ``rlanything_core.loop.coding_evaluation.CodingEvaluator``: pass rate on held-out problems and the unit-test
writer's UT and Detect rates), so one module serves them all (``experiments/builders.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlanything_core.lightning.module import RLAnythingModule
from rlanything_core.loop.protocol import Evaluator, JudgeAccuracyEvaluator

__all__ = ["AgentModule"]


class AgentModule(RLAnythingModule):
    """``RLAnythingModule`` with evaluation every ``eval_every`` iterations and at the end of training.

    Args:
        evaluator: an ``Evaluator`` (``AgentEvaluator``, ``CodingEvaluator``); ``None`` disables evaluation.
        eval_every: evaluate after every this many iterations (0: only at the end).
        eval_at_start: also evaluate before the first update (the "before optimization" row).
        judge_eval_every: between full evaluations, every this many iterations score only the judge's process
            accuracy (a ``JudgeAccuracyEvaluator``'s ``judge_accuracy()``, far cheaper than a full evaluation;
            0: never; other evaluators skip these).
        *args, **kwargs: see ``RLAnythingModule``.
    """

    def __init__(
        self,
        *args: Any,
        evaluator: Evaluator | None = None,
        eval_every: int = 0,
        eval_at_start: bool = False,
        judge_eval_every: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if eval_every < 0:
            raise ValueError(f"eval_every: expected >= 0, got {eval_every}")
        if judge_eval_every < 0:
            raise ValueError(f"judge_eval_every: expected >= 0, got {judge_eval_every}")
        if evaluator is not None and not isinstance(evaluator, Evaluator):  # now, not at the first evaluation
            raise TypeError(
                f"evaluator: expected a loop.protocol.Evaluator (callable, with a bool attribute `sharded`), got "
                f"{type(evaluator).__name__}"
            )
        self.judge_eval_every = judge_eval_every
        self.evaluator = evaluator
        self.eval_every = eval_every
        self.eval_at_start = eval_at_start
        self.evaluations: list[dict[str, float]] = []
        self.test_metrics: dict[str, float] | None = None  # set by test_step (eval_only)

    def evaluate(self, completed: int, *, judge_only: bool = False) -> None:
        """Evaluate (or only score the judge) after ``completed`` iterations and log the metrics (rank 0)."""
        evaluator = self.evaluator
        if evaluator is None:
            return
        scores = self._scores(evaluator, judge_only=judge_only)
        if scores is None:
            return
        metrics = {f"eval/{k}": v for k, v in scores.items()}
        metrics["eval/iteration"] = float(completed)
        if not judge_only:
            self.evaluations.append(metrics)
        if not self.trainer.is_global_zero:
            return
        for logger in self.loggers:
            logger.log_metrics(metrics, step=completed)

    def _scores(self, evaluator: Evaluator, *, judge_only: bool = False) -> dict[str, float] | None:
        """The evaluator's metrics (or the judge's accuracy) on the full weights; ``None`` where nothing was scored.

        Collective: every rank must call it. A sharded evaluator (loop.sharded_evaluation, the coding evaluator)
        splits the work over the ranks and gathers it: every rank calls it and gets the whole result; any other
        evaluator runs on rank 0 alone (``None`` elsewhere). An evaluator that cannot score the judge alone
        (no ``judge_accuracy``) scores nothing for ``judge_only``: its full evaluations are its only ones.
        """
        score: Callable[[], dict[str, float]] = evaluator
        if judge_only:
            if not isinstance(evaluator, JudgeAccuracyEvaluator):
                return None
            score = evaluator.judge_accuracy
        with self.gathered_models():  # every rank gathers (collective); evaluation runs on the full weights
            if not evaluator.sharded and not self.trainer.is_global_zero:
                return None
            scores = score()
            return scores if scores or not judge_only else None

    def test_step(self, batch: Any, batch_idx: int) -> None:
        """``trainer.test`` (``eval_only``): evaluate the models as they are once, with no update.

        Lightning sets the module up as for a fit (launches the ranks, ``configure_model``: FSDP2 shards, ranks that
        built the models on the meta device receive rank 0's weights; the module on the strategy's device), so the
        evaluation sees the models a fit's first evaluation would. The raw metrics land in ``test_metrics`` on the
        ranks that evaluated (every rank for a sharded evaluator, else rank 0; ``{}`` without an evaluator).
        """
        self.test_metrics = {} if self.evaluator is None else self._scores(self.evaluator)

    def on_train_start(self) -> None:
        """Optionally evaluate the models as they are before any update."""
        datamodule = getattr(self.trainer, "datamodule", None)
        if self.eval_at_start and getattr(datamodule, "completed", 0) == 0:
            self.evaluate(0)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Evaluate every ``eval_every`` iterations."""
        completed = int(batch.iteration) + 1
        if self.eval_every and completed % self.eval_every == 0:
            self.evaluate(completed)
        elif (
            self.judge_eval_every
            and completed % self.judge_eval_every == 0
            and completed < int(self.trainer.max_epochs or 0)  # the last iteration gets the full evaluation
            and isinstance(self.evaluator, JudgeAccuracyEvaluator)
        ):
            self.evaluate(completed, judge_only=True)

    def on_train_end(self) -> None:
        """Final evaluation, unless the last iteration was just evaluated."""
        datamodule = getattr(self.trainer, "datamodule", None)
        completed = int(getattr(datamodule, "completed", 0))
        if self.evaluator is not None and not (
            self.evaluations and self.evaluations[-1]["eval/iteration"] == completed
        ):
            self.evaluate(completed)

