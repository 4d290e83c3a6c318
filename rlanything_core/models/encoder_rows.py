"""What the encoder policy and the encoder judge share: a split encoder, the tokenizer's budget, and the token rows.

Both CPU-scale models (:class:`~rlanything_core.models.scorer.EncoderScorerPolicy`,
:class:`~rlanything_core.models.encoder_judge.EncoderJudge`) read one text per decision through a
:class:`~rlanything_core.models.encoder.SplitEncoder`, cut it at a token budget (counting the cuts), and give the
trainer the log-prob of each row's decision at the row's response position (rows laid out by
:class:`~rlanything_core.models.scorer_rows.ScorerRowLayout`). :class:`EncoderRowModel` holds that once; a family
adds its head and :meth:`EncoderRowModel.decision_logprobs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from rlanything_core.models.encoder import FrozenPrecision, SplitEncoder
from rlanything_core.models.scorer_rows import DecodedRow, ScorerRowLayout

__all__ = ["EncoderRowModel", "share_frozen_bottom"]

TokenIds = tuple[int, ...]


class EncoderRowModel(nn.Module):
    """A split encoder over one text per decision, scored through token rows (subclasses add the head).

    Args:
        bert: a transformers ``BertModel`` (all-MiniLM-L6-v2 from :func:`~rlanything_core.models.encoder.load_minilm`).
        tokenizer: its tokenizer.
        budget_name: the subclass's argument name of the token budget (named in the error of a bad budget).
        budget: token budget of the text, ``[CLS]``/``[SEP]`` included (``>= 3``).
        trainable_layers: top encoder layers fine-tuned (the rest frozen and cached).
        cache_size: frozen-bottom outputs kept in memory (LRU).
        frozen_precision: the precision of the frozen bottom over the texts
            (:class:`~rlanything_core.models.encoder.FrozenPrecision`; float32, the default, is exact).
        bucket_rows: texts per padded batch, grouped by length (0: one batch;
            :class:`~rlanything_core.models.encoder.SplitEncoder`).
    """

    def __init__(
        self,
        bert: Any,
        tokenizer: Any,
        *,
        budget_name: str,
        budget: int,
        trainable_layers: int,
        cache_size: int,
        frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
        bucket_rows: int = 0,
    ) -> None:
        super().__init__()
        if budget < 3:
            raise ValueError(f"{budget_name}: expected >= 3, got {budget}")
        self.encoder = SplitEncoder.for_tokenizer(
            bert,
            tokenizer,
            trainable_layers=trainable_layers,
            cache_size=cache_size,
            frozen_precision=frozen_precision,
            bucket_rows=bucket_rows,
        )
        self.tokenizer = tokenizer
        self.layout = ScorerRowLayout(len(tokenizer))

    def cut_ids(self, text: str, budget: int, stats: dict[str, int], seen: str, cut: str) -> TokenIds:
        """``text``'s ids (no special tokens) within ``budget`` (specials included), cut at the end.

        Counts the text in ``stats[seen]`` and a cut in ``stats[cut]``.
        """
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        keep = budget - 2
        stats[seen] += 1
        if len(ids) > keep:
            stats[cut] += 1
            ids = ids[:keep]
        return tuple(int(t) for t in ids)

    def decision_logprobs(self, rows: Sequence[DecodedRow], indices: Sequence[int]) -> Tensor:
        """``(len(rows),)``: the log-prob of each row's decision (every row has a response token).

        Args:
            rows: the decoded rows.
            indices: their indices in the batch (named in errors).
        """
        raise NotImplementedError

    def row_logprobs(self, input_ids: Tensor, attention_mask: Tensor, score_mask: Tensor) -> Tensor:
        """Log-prob of each row's decision (rows laid out by :class:`ScorerRowLayout`).

        Args:
            input_ids: ``(N, L)`` int64 rows.
            attention_mask: ``(N, L)`` bool.
            score_mask: ``(N, L)`` bool, the response position of each row.

        Returns:
            ``(N, L)`` float32: the decision's log-prob at each row's response position, 0 elsewhere.
        """
        rows = [
            self.layout.decode(input_ids[n].cpu(), attention_mask[n].cpu(), score_mask[n].cpu())
            for n in range(input_ids.shape[0])
        ]
        out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
        scored = [n for n, r in enumerate(rows) if r.position >= 0]
        if not scored:
            return out
        picked = self.decision_logprobs([rows[n] for n in scored], scored)
        cols = torch.tensor([rows[n].position for n in scored])
        return out.index_put((torch.tensor(scored), cols), picked.float().to(out.device))


def share_frozen_bottom(first: Any, second: Any) -> bool:
    """Let ``second``'s encoder read and fill ``first``'s store of frozen-bottom outputs, where both bottoms are equal.

    The policy and the judge of a run (and the evaluation, which plays the same models) then run the frozen bottom once
    per distinct text between them. Call it after every weight was loaded.

    Args:
        first: an encoder model (an :class:`EncoderRowModel`), or anything else (nothing is shared).
        second: another one.

    Returns:
        Whether one store is shared now (``False``: a model is no encoder model, or their bottoms differ: another
        checkpoint, split or precision; see :meth:`~rlanything_core.models.encoder.SplitEncoder.bottom_digest`).
    """
    if not (isinstance(first, EncoderRowModel) and isinstance(second, EncoderRowModel)):
        return False
    return second.encoder.share_bottom_cache(first.encoder)
