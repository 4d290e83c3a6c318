"""``RolloutBatch``: one iteration's episodes as tensors, built once, from collation to the training rows.

It holds the padded step grid (``StepBatch``, what the maths reads), the token rows of the policy (one per step)
and of the judge (one per requested vote), each row naming its (rollout, step, vote) cell in ``rows.index``: the
join between the grid and the rows lives in one place. The reward parts add their columns on the grid::

    episodes --RolloutBatch.from_episodes--> steps, policy_rows, judge_rows
      --with_columns(step_reward=R (B, S), advantages=(B, S), judge_targets=(B, S, M))-->
      --policy_training_rows(keep) / judge_training_rows(keep)--> TrainingRows (one final advantage per row)

Every setting builds it this way: the coding setting's programs are one-step episodes
(``collect.coding.program_episodes``), their unit tests the judge samples of each task's first program's step.

Row order: policy rows in (rollout, step) row-major order; judge rows in the row-major order of
``steps.vote_mask.nonzero()`` (rollout, then step, then vote), the order of ``tensor[steps.vote_mask]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core._validation import check_floating, check_shape, check_tensor
from rlanything_core.collect.batching import TokenRows, collate, judge_rows, policy_rows
from rlanything_core.records import Episode
from rlanything_core.types import StepBatch

__all__ = ["RolloutBatch", "TrainingRows"]


@dataclass(frozen=True)
class TrainingRows:
    """Token rows with one scalar advantage each.

    Attributes:
        rows: the token rows.
        advantages: ``(N,)`` float32, one per row: final (the loss takes them as they are).
        group: ``(N,)`` int64, the task group of each row (keeps groups whole when splitting across updates/ranks).
    """

    rows: TokenRows
    advantages: Tensor
    group: Tensor

    @property
    def num_rows(self) -> int:
        """``N``."""
        return int(self.advantages.shape[0])

    def subset(self, index: Tensor) -> TrainingRows:
        """The rows at ``index`` (dynamic padding to their own longest row)."""
        return TrainingRows(
            rows=self.rows.select(index),
            advantages=self.advantages[index],
            group=self.group[index],
        )


@dataclass(frozen=True)
class RolloutBatch:
    """The step grid and both models' token rows of one iteration, plus the columns the reward parts add.

    Attributes:
        steps: the padded (rollout, step[, vote]) grid of outcomes, masks and votes.
        policy_rows: one row per policy step; ``index[:, :2]`` is its (rollout, step) cell.
        judge_rows: one row per requested judge vote (``index`` its (rollout, step, vote) cell), or ``None`` when
            ``steps`` has no votes.
        step_reward: ``(B, S)`` integrated step reward ``R = O + lam * mean(votes)``, once computed.
        advantages: ``(B, S)`` the policy's advantages (the integrator's), once computed.
        judge_targets: ``(B, S, M)`` the judge's final targets (e.g. standardized consistency targets), once computed.
    """

    steps: StepBatch
    policy_rows: TokenRows
    judge_rows: TokenRows | None
    step_reward: Tensor | None = None
    advantages: Tensor | None = None
    judge_targets: Tensor | None = None

    @classmethod
    def from_episodes(cls, episodes: Sequence[Episode], *, pad_id: int, num_votes: int | None = None) -> RolloutBatch:
        """Collate ``episodes`` and build both models' rows once.

        Args:
            episodes: rollouts (with judge samples when a judge voted); ``group_id`` gives the task group.
            pad_id: padding token of the rows.
            num_votes: ``M`` (default: the most judge samples on any step; ``0`` drops the votes).

        Raises:
            ValueError: no episode, or ``num_votes < 0``.
        """
        steps = collate(episodes, num_votes=num_votes)
        return cls(
            steps=steps,
            policy_rows=policy_rows(episodes, pad_id=pad_id),
            judge_rows=judge_rows(episodes, pad_id=pad_id, num_votes=num_votes) if steps.has_votes else None,
        )

    def with_columns(
        self,
        *,
        step_reward: Tensor | None = None,
        advantages: Tensor | None = None,
        judge_targets: Tensor | None = None,
    ) -> RolloutBatch:
        """This batch with the given columns added (``None`` leaves a column as it is); shapes are checked.

        Raises:
            ValueError: a column is not a floating tensor on the grid (``(B, S)``, or ``(B, S, M)`` for
                ``judge_targets``), or ``judge_targets`` is given for a batch without votes.
        """
        grid = tuple(self.steps.step_mask.shape)
        for name, value in (("step_reward", step_reward), ("advantages", advantages)):
            if value is not None:
                _check_column(name, value, grid)
        if judge_targets is not None:
            if self.steps.vote_mask is None:
                raise ValueError("judge_targets: expected a batch with votes, got one without")
            _check_column("judge_targets", judge_targets, tuple(self.steps.vote_mask.shape))
        return dataclasses.replace(
            self,
            step_reward=self.step_reward if step_reward is None else step_reward,
            advantages=self.advantages if advantages is None else advantages,
            judge_targets=self.judge_targets if judge_targets is None else judge_targets,
        )

    def policy_training_rows(self, keep: Tensor, *, drop_zero: bool = True) -> TrainingRows | None:
        """The policy rows of the rollouts in ``keep``, each with its step's advantage.

        Args:
            keep: ``(B,)`` bool, the rollouts whose steps may train (e.g. tasks in the policy band).
            drop_zero: leave out rows whose advantage is exactly 0 (the authors' choice: no signal, all cost).

        Returns:
            The selected rows, or ``None`` when none is selected.

        Raises:
            ValueError: the ``advantages`` column is missing.
        """
        if self.advantages is None:
            raise ValueError("advantages: expected the column (with_columns(advantages=...)), got none")
        index = self.policy_rows.index
        return _select(self.policy_rows, self.advantages[index[:, 0], index[:, 1]], keep, self.steps, drop_zero)

    def judge_training_rows(self, keep: Tensor, *, drop_zero: bool = True) -> TrainingRows | None:
        """The judge rows of the rollouts in ``keep``, each with its vote's target.

        Args:
            keep: ``(B,)`` bool, the rollouts whose votes may train (e.g. tasks in the judge band).
            drop_zero: leave out rows whose target is exactly 0.

        Returns:
            The selected rows, or ``None`` when none is selected (or the batch has no votes).

        Raises:
            ValueError: the ``judge_targets`` column is missing from a batch with votes.
        """
        if self.judge_rows is None:
            return None
        if self.judge_targets is None:
            raise ValueError("judge_targets: expected the column (with_columns(judge_targets=...)), got none")
        index = self.judge_rows.index
        targets = self.judge_targets[index[:, 0], index[:, 1], index[:, 2]]
        return _select(self.judge_rows, targets, keep, self.steps, drop_zero)


def _check_column(name: str, value: Tensor, shape: tuple[int, ...]) -> None:
    check_tensor(name, value)
    check_floating(name, value)
    check_shape(name, value, shape)


def _select(rows: TokenRows, values: Tensor, keep: Tensor, steps: StepBatch, drop_zero: bool) -> TrainingRows | None:
    """The rows of rollouts in ``keep`` (and with a non-zero value when ``drop_zero``), with their values."""
    check_tensor("keep", keep)
    check_shape("keep", keep, (steps.num_rollouts,))
    if keep.dtype != torch.bool:
        raise ValueError(f"keep: expected a bool tensor, got {keep.dtype}")
    rollout = rows.index[:, 0]
    values = values.float()
    selected = keep[rollout] & (values != 0) if drop_zero else keep[rollout]
    if not bool(selected.any()):
        return None
    index = selected.nonzero().squeeze(1)
    return TrainingRows(rows.select(index), values[index], steps.group_index[rollout[index]])
