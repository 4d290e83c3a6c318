"""The data model: one batch of ragged multi-step trajectories, from collation to the loss.

Axes: task group ``g`` -> rollout ``b`` (flattened to ``B`` with ``group_index``) -> step ``s`` -> judge vote ``m``.
Groups are never reshaped with ``view(-1, G)``: filtering tasks by success rate makes groups uneven, so every
group statistic goes through ``group_index``. Padding positions may hold anything (NaN included); every function in
the library selects with the masks and never multiplies by them, so padding cannot change an output.

One iteration's episodes become one ``RolloutBatch``, built once: the padded step grid (``StepBatch``, what the maths
reads, from ``collate``), the token rows of the policy (one per step) and of the judge (one per requested vote), each
row naming its (rollout, step, vote) cell in ``TokenRows.index``, so the join between the grid and the rows lives
here only. The reward parts add their columns on the grid, and the rows leave with one final advantage each::

    episodes --RolloutBatch.from_episodes--> steps, policy_rows, judge_rows
      --with_columns(step_reward=R (B, S), advantages=(B, S), judge_targets=(B, S, M))-->
      --policy_training_rows(keep) / judge_training_rows(keep)--> TrainingRows (one final advantage per row)

Every setting builds it this way: the coding setting's programs are one-step episodes
(``collect.coding.program_episodes``), their unit tests the judge samples of each task's first program's step.

Row order: policy rows in (rollout, step) row-major order; judge rows in the row-major order of
``steps.vote_mask.nonzero()`` (rollout, then step, then vote), the order of ``tensor[steps.vote_mask]``.

Rows carry no sampling-time log-probs: the trainer recomputes every row's old log-probs under the pre-update weights
(``training/update.py``), which corrects free generation, likelihood selection and vLLM sampling alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_finite_where,
    check_floating,
    check_index,
    check_shape,
    check_tensor,
)
from rlanything_core.records import Episode, GeneratedSequence

__all__ = [
    "LossOutput",
    "RolloutBatch",
    "StepBatch",
    "TokenRows",
    "TrainingRows",
    "collate",
    "judge_rows",
    "policy_rows",
    "rows_from_records",
    "rows_from_sequences",
]


@dataclass(frozen=True)
class StepBatch:
    """Outcomes, step grid and judge votes of ``B`` rollouts, validated on construction.

    Attributes:
        outcome: ``(B,)`` float, the verifiable outcome ``O`` of each rollout (``+1`` success, ``-1`` failure in the
            paper; any finite value is accepted).
        step_mask: ``(B, S)`` bool, ``True`` for the steps a rollout took. Right-padded: each row is a prefix.
        group_index: ``(B,)`` int64, the task group of each rollout (any non-negative ids, groups of any size).
        votes: ``(B, S, M)`` float or ``None``. Judge votes ``S_{tau_i,j}``; meaningful (``+1``/``-1``) only where
            ``vote_valid``.
        vote_mask: ``(B, S, M)`` bool or ``None``: ``True`` where a vote was requested (a judge output exists).
            Must lie inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool or ``None``: ``True`` where that output parsed to ``+1``/``-1``. Must lie
            inside ``vote_mask``; ``vote_mask & ~vote_valid`` are format failures (kept, counted, penalized).

    Examples:
        >>> import torch
        >>> batch = StepBatch(
        ...     outcome=torch.tensor([1.0, -1.0]),
        ...     step_mask=torch.tensor([[True, True], [True, False]]),
        ...     group_index=torch.tensor([0, 0]),
        ... )
        >>> batch.num_rollouts, batch.max_steps, batch.has_votes
        (2, 2, False)
    """

    outcome: Tensor
    step_mask: Tensor
    group_index: Tensor
    votes: Tensor | None = None
    vote_mask: Tensor | None = None
    vote_valid: Tensor | None = None
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        outcome = check_tensor("outcome", self.outcome)
        step_mask = check_tensor("step_mask", self.step_mask)
        group_index = check_tensor("group_index", self.group_index)
        check_floating("outcome", outcome)
        check_shape("outcome", outcome, (None,))
        (b,) = outcome.shape
        check_bool("step_mask", step_mask)
        check_shape("step_mask", step_mask, (b, None))
        check_index("group_index", group_index)
        check_shape("group_index", group_index, (b,))
        check_finite_where("outcome", outcome, torch.ones_like(outcome, dtype=torch.bool))
        if step_mask.shape[1] > 1 and bool((step_mask[:, 1:] & ~step_mask[:, :-1]).any()):
            raise ValueError("step_mask: expected right padding (each row a prefix of True), got a gap")
        vote_fields = (self.votes, self.vote_mask, self.vote_valid)
        if all(v is None for v in vote_fields):
            return
        if any(v is None for v in vote_fields):
            raise ValueError("votes, vote_mask, vote_valid: give all three or none")
        votes = check_tensor("votes", self.votes)
        vote_mask = check_tensor("vote_mask", self.vote_mask)
        vote_valid = check_tensor("vote_valid", self.vote_valid)
        s = step_mask.shape[1]
        check_floating("votes", votes)
        check_shape("votes", votes, (b, s, None))
        m = votes.shape[2]
        if m < 1:  # m = 0 would silently give outcome-only advantages where votes were meant to count
            raise ValueError(f"votes: expected m >= 1 vote slots, got shape {tuple(votes.shape)}; pass votes=None "
                             "(and no vote_mask/vote_valid) for a batch without judge votes")
        check_bool("vote_mask", vote_mask)
        check_shape("vote_mask", vote_mask, (b, s, m))
        check_bool("vote_valid", vote_valid)
        check_shape("vote_valid", vote_valid, (b, s, m))
        if bool((vote_mask & ~step_mask.unsqueeze(-1)).any()):
            raise ValueError("vote_mask: a vote is marked at a padded step (vote_mask must lie inside step_mask)")
        if bool((vote_valid & ~vote_mask).any()):
            raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must lie inside vote_mask)")
        check_finite_where("votes", votes, vote_valid)
        off = vote_valid & (votes.abs() != 1.0)
        if bool(off.any()):
            where = tuple(int(i) for i in off.nonzero()[0])
            raise ValueError(f"votes: expected +1 or -1 where vote_valid, got {float(votes[where])} at {where}")

    @property
    def num_rollouts(self) -> int:
        """``B``."""
        return int(self.outcome.shape[0])

    @property
    def max_steps(self) -> int:
        """``S``, the padded step dimension."""
        return int(self.step_mask.shape[1])

    @property
    def has_votes(self) -> bool:
        """Whether judge votes are attached."""
        return self.votes is not None

    @property
    def num_steps(self) -> Tensor:
        """``(B,)`` int64 number of steps of each rollout."""
        return self.step_mask.sum(dim=1)


def collate(episodes: Sequence[Episode], *, num_votes: int | None = None) -> StepBatch:
    """Collate episodes into the padded step grid.

    Args:
        episodes: rollouts; ``group_id`` gives the task group. Judge samples per step (``step.judge``) become votes;
            a step judged fewer than ``num_votes`` times has its missing slots masked out.
        num_votes: ``M``; default the largest number of judge samples on any step. ``0`` drops the votes.

    Returns:
        A validated ``StepBatch`` (votes attached when ``M > 0``).
    """
    if not episodes:
        raise ValueError("episodes: expected at least one episode, got none")
    b = len(episodes)
    s = max(1, max(len(e.steps) for e in episodes))
    m = num_votes if num_votes is not None else max((len(st.judge) for e in episodes for st in e.steps), default=0)
    if m < 0:
        raise ValueError(f"num_votes: expected >= 0, got {m}")
    outcome = torch.tensor([e.outcome for e in episodes], dtype=torch.float32)
    group_index = torch.tensor([e.group_id for e in episodes], dtype=torch.int64)
    step_mask = torch.zeros(b, s, dtype=torch.bool)
    for i, e in enumerate(episodes):
        step_mask[i, : len(e.steps)] = True
    if m == 0:
        return StepBatch(outcome=outcome, step_mask=step_mask, group_index=group_index)
    votes = torch.zeros(b, s, m)
    vote_mask = torch.zeros(b, s, m, dtype=torch.bool)
    vote_valid = torch.zeros(b, s, m, dtype=torch.bool)
    for i, e in enumerate(episodes):
        for j, step in enumerate(e.steps):
            for k, sample in enumerate(step.judge[:m]):
                vote_mask[i, j, k] = True
                if sample.vote in (1, -1):
                    votes[i, j, k] = float(sample.vote)
                    vote_valid[i, j, k] = True
    return StepBatch(
        outcome=outcome,
        step_mask=step_mask,
        group_index=group_index,
        votes=votes,
        vote_mask=vote_mask,
        vote_valid=vote_valid,
    )


@dataclass(frozen=True)
class TokenRows:
    """Right-padded token rows for a loss, one per sample (policy step or judge output).

    Attributes:
        input_ids: ``(N, L)`` int64, prompt then response, padded with ``pad_id``.
        attention_mask: ``(N, L)`` bool.
        response_mask: ``(N, L)`` bool, the generated tokens (the loss positions).
        index: ``(N, 3)`` int64, the (rollout, step, vote) cell of each row (vote ``-1`` for policy rows).
    """

    input_ids: Tensor
    attention_mask: Tensor
    response_mask: Tensor
    index: Tensor

    @property
    def num_rows(self) -> int:
        """``N``."""
        return int(self.input_ids.shape[0])

    def select(self, rows: Tensor | Sequence[int]) -> TokenRows:
        """A subset of rows, re-trimmed to its own longest row (dynamic padding)."""
        idx = torch.as_tensor(rows, dtype=torch.int64)
        length = int(self.attention_mask[idx].sum(dim=1).max()) if idx.numel() else 0
        return TokenRows(
            input_ids=self.input_ids[idx, :length],
            attention_mask=self.attention_mask[idx, :length],
            response_mask=self.response_mask[idx, :length],
            index=self.index[idx],
        )


def rows_from_sequences(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    index: Sequence[tuple[int, int, int]],
    *,
    pad_id: int,
) -> TokenRows:
    """Pack (prompt, response) pairs into right-padded rows (padded to the longest row only)."""
    if not (len(prompts) == len(responses) == len(index)):
        raise ValueError(
            f"prompts, responses, index: expected equal lengths, got {len(prompts)}, {len(responses)}, {len(index)}"
        )
    n_rows = len(prompts)
    length = max((len(p) + len(r) for p, r in zip(prompts, responses)), default=0)
    input_ids = torch.full((n_rows, length), pad_id, dtype=torch.int64)
    attention_mask = torch.zeros(n_rows, length, dtype=torch.bool)
    response_mask = torch.zeros(n_rows, length, dtype=torch.bool)
    for n, (p, r) in enumerate(zip(prompts, responses)):
        lp_len, r_len = len(p), len(r)
        input_ids[n, : lp_len + r_len] = torch.tensor(list(p) + list(r), dtype=torch.int64)
        attention_mask[n, : lp_len + r_len] = True
        response_mask[n, lp_len : lp_len + r_len] = True
    return TokenRows(
        input_ids=input_ids,
        attention_mask=attention_mask,
        response_mask=response_mask,
        index=torch.tensor(list(index), dtype=torch.int64).reshape(n_rows, 3),
    )


def rows_from_records(
    records: Sequence[GeneratedSequence], index: Sequence[tuple[int, int, int]], *, pad_id: int
) -> TokenRows:
    """``rows_from_sequences`` over generated records (steps, judge samples, programs, unit tests): one row each."""
    return rows_from_sequences(
        [r.prompt_token_ids for r in records], [r.token_ids for r in records], index, pad_id=pad_id
    )


def policy_rows(episodes: Sequence[Episode], *, pad_id: int) -> TokenRows:
    """One row per policy step, in (rollout, step) row-major order."""
    cells = [(i, j, -1) for i, e in enumerate(episodes) for j in range(len(e.steps))]
    return rows_from_records([episodes[i].steps[j] for i, j, _ in cells], cells, pad_id=pad_id)


def judge_rows(episodes: Sequence[Episode], *, pad_id: int, num_votes: int | None = None) -> TokenRows:
    """One row per judge output, in the row-major order of ``collate(episodes).vote_mask.nonzero()``."""
    cells = [
        (i, j, k)
        for i, e in enumerate(episodes)
        for j, st in enumerate(e.steps)
        for k in range(len(st.judge) if num_votes is None else min(num_votes, len(st.judge)))
    ]
    return rows_from_records([episodes[i].steps[j].judge[k] for i, j, k in cells], cells, pad_id=pad_id)


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


@dataclass(frozen=True)
class LossOutput:
    """What every loss returns: the scalar to backpropagate and detached metrics to log.

    Attributes:
        loss: scalar tensor (with grad when the inputs had it).
        metrics: name -> scalar tensor, detached.
    """

    loss: Tensor
    metrics: dict[str, Tensor] = field(default_factory=dict)
