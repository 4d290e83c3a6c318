"""From rollout records to tensors: the step grid (``StepBatch``) and token rows for the losses.

The maths runs on the padded (rollout, step, vote) grid; token rows are built here, at the collector edge, one row per
policy step (step-as-sample, as in the paper's trainer) or one row per judge output. ``collect.rollout_batch`` holds
both, built once, with the cells that join them.

Rows carry no sampling-time log-probs: the trainer recomputes every row's old log-probs under the pre-update weights
(``lightning.module``), which corrects free generation, likelihood selection and vLLM sampling alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core.records import Episode, GeneratedSequence
from rlanything_core.types import StepBatch

__all__ = ["TokenRows", "collate", "judge_rows", "policy_rows", "rows_from_records", "rows_from_sequences"]


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
